/**
 * The part of the DOM the extraction rules use, declared here so the package compiles without
 * TypeScript's DOM library (it is also compiled as part of packages that have none); linkedom's
 * documents have all of it.
 */
export interface DomNode {
  readonly nodeType: number;
  readonly textContent: string | null;
  readonly childNodes: Iterable<DomNode>;
}

export interface DomElement extends DomNode {
  readonly tagName: string;
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): Iterable<DomElement> & { readonly length: number };
  prepend(node: DomNode): void;
}

export interface DomDocument extends DomNode {
  readonly title: string;
  readonly head: DomElement | null;
  readonly body: DomElement | null;
  readonly documentElement: DomElement;
  createElement(tag: string): DomElement;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): Iterable<DomElement> & { readonly length: number };
}

/** Either a document or an element: what the rules search in. */
export type DomScope = DomDocument | DomElement;
