/**
 * Building the page's DOM. Every string from a snapshot (file names, stack
 * frames, allocator settings) goes in as a text node or an attribute value,
 * never as markup, so a stack that carries HTML or script shows as text and
 * runs none of it. The one exception is the address maps' SVG, which
 * address-map.ts writes with every string escaped (escapeXml).
 */

type Child = Node | string | null | undefined | false;

/** An element with attributes (set as values, not parsed) and children (strings become text nodes). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Readonly<Record<string, string | number | undefined>> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined) node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/** SVG written by address-map.ts (its strings escaped there), parsed as SVG, never as HTML. */
export function svgOf(markup: string): Node {
  const doc = new DOMParser().parseFromString(markup, 'image/svg+xml');
  // Not well-formed: said, rather than drawn in part.
  if (doc.getElementsByTagName('parsererror').length > 0)
    throw new Error('an address map is not well-formed SVG');
  return document.importNode(doc.documentElement, true);
}
