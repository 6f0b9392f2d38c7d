/** wrangler's Data rule (wrangler.toml `[[rules]] type = "Data"`) turns a `.ttf` import into its bytes. */
declare module "*.ttf" {
  const data: ArrayBuffer;
  export default data;
}
