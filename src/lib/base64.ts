/** Standard base64 (with padding) of bytes, and back: what webhook secrets and sealed values are written in. */
export const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
export const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
