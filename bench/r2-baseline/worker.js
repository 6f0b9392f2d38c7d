// The local R2 emulation alone, without the product's code: a request body stored by one put or
// as a multipart object (parts of `?part=` MiB, uploaded one after the other as src/lib/r2-stream.ts
// does), and either object served whole. bench/r2-baseline.ts times these against the product's
// transfers in the same run.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const key = url.pathname.slice(1);
    if (request.method === "PUT" && key === "single") {
      const stored = await env.BUCKET.put(key, request.body);
      return Response.json({ size: stored.size });
    }
    if (request.method === "PUT" && key === "multipart") {
      const partBytes = Number(url.searchParams.get("part") ?? "8") * 1024 * 1024;
      const upload = await env.BUCKET.createMultipartUpload(key);
      const parts = [];
      let buffer = new Uint8Array(partBytes);
      let filled = 0;
      const reader = request.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        let offset = 0;
        while (offset < value.byteLength) {
          const take = Math.min(partBytes - filled, value.byteLength - offset);
          buffer.set(value.subarray(offset, offset + take), filled);
          filled += take;
          offset += take;
          if (filled === partBytes) {
            parts.push(await upload.uploadPart(parts.length + 1, buffer));
            buffer = new Uint8Array(partBytes);
            filled = 0;
          }
        }
      }
      if (filled > 0) parts.push(await upload.uploadPart(parts.length + 1, buffer.subarray(0, filled)));
      const stored = await upload.complete(parts);
      return Response.json({ size: stored.size, parts: parts.length });
    }
    if (request.method === "GET" && (key === "single" || key === "multipart")) {
      const object = await env.BUCKET.get(key);
      if (!object) return new Response("missing", { status: 404 });
      // A content type, as the product's media routes send: without one, wrangler dev gzips the
      // body for a client that accepts it (Node's fetch does), as Cloudflare's edge would.
      return new Response(object.body, {
        headers: { "content-length": String(object.size), "content-type": "application/octet-stream" },
      });
    }
    return new Response("not found", { status: 404 });
  },
};
