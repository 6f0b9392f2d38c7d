/** Vite's `?raw` imports (a file's text), as the workers tests use for wrangler.toml. */
declare module "*?raw" {
  const text: string;
  export default text;
}
