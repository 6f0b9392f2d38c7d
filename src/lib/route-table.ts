/**
 * Whether a request names one of the routes of an OpenAPI registry: the method (HEAD as GET,
 * as Hono answers it) and the path against each template, `{param}` standing for one segment.
 */
export type RouteTest = (method: string, path: string) => boolean;

export function routeTable(routes: Iterable<{ method: string; path: string }>): RouteTest {
  const byMethod = new Map<string, RegExp[]>();
  for (const { method, path } of routes) {
    const pattern = path
      .split(/\{[^}/]+\}/)
      .map((literal) => literal.replace(/[.*+?^$()|[\]\\]/g, "\\$&"))
      .join("[^/]+");
    const list = byMethod.get(method.toUpperCase()) ?? [];
    list.push(new RegExp(`^${pattern}$`));
    byMethod.set(method.toUpperCase(), list);
  }
  return (method, path) => {
    const verb = method.toUpperCase() === "HEAD" ? "GET" : method.toUpperCase();
    return (byMethod.get(verb) ?? []).some((template) => template.test(path));
  };
}
