/**
 * Stripe's request encoding: application/x-www-form-urlencoded with bracketed keys
 * (`metadata[plan]=pro`, `line_items[0][price_data][currency]=eur`, `lookup_keys[0]=x`,
 * also `lookup_keys[]=x`), decoded into nested objects and arrays.
 */
export type FormValue = string | FormValue[] | { [key: string]: FormValue };

export function decodeStripeForm(text: string): Record<string, FormValue> {
  const root: Record<string, FormValue> = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const path = rawKey.replace(/\]/g, "").split("[");
    let node: any = root;
    for (let i = 0; i < path.length; i++) {
      const last = i === path.length - 1;
      const key = path[i] === "" && Array.isArray(node) ? String(node.length) : path[i];
      if (last) {
        node[key] = value;
      } else {
        const nextIsIndex = /^\d*$/.test(path[i + 1]);
        node[key] ??= nextIsIndex ? [] : {};
        node = node[key];
      }
    }
  }
  return compactArrays(root) as Record<string, FormValue>;
}

/** `a[3]=x` alone gives a sparse array: keep the order, drop the holes. */
function compactArrays(value: FormValue): FormValue {
  if (Array.isArray(value)) return value.filter((v) => v !== undefined).map(compactArrays);
  if (typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, compactArrays(v)]));
  return value;
}
