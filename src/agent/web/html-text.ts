/**
 * Readable text from an HTML page: Mozilla Readability (the engine of Firefox Reader View) finds
 * the article and drops navigation, headers, footers, ads and scripts; the article is then
 * written out as plain text that keeps its structure (headings marked with #, list items with
 * -, table cells separated by |, links as [text](absolute URL)). A page Readability finds no
 * article in (a short page, a bare table) is written out whole, minus scripts and chrome.
 */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

export interface ReadableHtml {
  title: string | undefined;
  /** The author line Readability found, if any. */
  byline?: string;
  /** The publication time the page declares, if any. */
  published?: string;
  text: string;
  /** The article Readability found (true), or the whole page (false). */
  article: boolean;
}

/** Tags whose content is never text. */
const SKIP = new Set(['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'embed', 'head', 'select', 'button', 'input', 'textarea']);
/** Page chrome, dropped when the page is written out whole. */
const CHROME = ['nav', 'header', 'footer', 'aside', 'form', '[role="navigation"]', '[role="banner"]', '[role="contentinfo"]', '[aria-hidden="true"]'];
const BLOCK = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'center', 'details', 'dialog', 'dd', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'footer', 'form', 'header', 'hgroup', 'html', 'main', 'nav', 'ol', 'p', 'section', 'summary', 'table', 'tbody', 'thead',
  'tfoot', 'ul', 'caption',
]);
const MIN_ARTICLE_CHARS = 200;
/** The article must hold at least this share of the page's text (without its chrome). */
const MIN_ARTICLE_SHARE = 0.3;

export function htmlToReadable(html: string, pageUrl?: string): ReadableHtml {
  const { document } = parseHTML(html);
  const pageTitle = clean(document.querySelector('title')?.textContent ?? '') || undefined;
  const base = baseUrl(document, pageUrl);

  let article: { title?: string | null; content?: string | null; byline?: string | null; publishedTime?: string | null } | null = null;
  try {
    // Readability changes the document it reads, so it gets its own copy.
    article = new Readability(parseHTML(html).document as unknown as Document, { keepClasses: false }).parse();
  } catch {
    article = null;
  }
  const body = document.body as unknown as Element | null;
  let whole = '';
  if (body) {
    for (const selector of CHROME) for (const el of [...body.querySelectorAll(selector)]) el.remove();
    whole = render(body, base);
  }
  if (article?.content) {
    const { document: articleDoc } = parseHTML(`<!doctype html><html><body>${article.content}</body></html>`);
    const text = render(articleDoc.body as unknown as Element, base);
    // An "article" that is a small part of the page (an intro above a long table or list, say)
    // would hide the data: then the whole page, minus its chrome, is the better read.
    if (text.length >= MIN_ARTICLE_CHARS && text.length >= whole.length * MIN_ARTICLE_SHARE) {
      const readable: ReadableHtml = { title: clean(article.title ?? '') || pageTitle, text, article: true };
      const byline = clean(article.byline ?? '');
      if (byline) readable.byline = byline;
      const published = clean(article.publishedTime ?? '');
      if (published) readable.published = published;
      return readable;
    }
  }
  return { title: pageTitle, text: whole, article: false };
}

function baseUrl(document: { querySelector(s: string): { getAttribute(n: string): string | null } | null }, pageUrl: string | undefined): string | undefined {
  const href = document.querySelector('base[href]')?.getAttribute('href');
  if (href) {
    try {
      return new URL(href, pageUrl).href;
    } catch {
      // fall through to the page URL
    }
  }
  return pageUrl;
}

/** Writes an element's content as structured plain text. */
function render(root: Element, base: string | undefined): string {
  const out = new TextBuilder();
  walk(root, out, base, { pre: false });
  return out.finish();
}

function walk(node: Node, out: TextBuilder, base: string | undefined, mode: { pre: boolean }): void {
  for (const child of [...node.childNodes]) {
    if (child.nodeType === 3) {
      out.inline(child.textContent ?? '', mode.pre);
      continue;
    }
    if (child.nodeType !== 1) continue;
    const el = child as Element;
    const tag = el.tagName.toLowerCase();
    if (SKIP.has(tag) || el.getAttribute('hidden') !== null) continue;
    switch (tag) {
      case 'br':
        out.lineBreak();
        break;
      case 'hr':
        out.block();
        out.raw('---');
        out.block();
        break;
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': {
        out.block();
        out.raw(`${'#'.repeat(Number(tag[1]))} `);
        walk(el, out, base, mode);
        out.block();
        break;
      }
      case 'li': {
        out.line();
        const ordered = el.parentElement?.tagName.toLowerCase() === 'ol';
        out.raw(ordered ? `${[...el.parentElement!.children].filter((c) => c.tagName.toLowerCase() === 'li').indexOf(el) + 1}. ` : '- ');
        walk(el, out, base, mode);
        out.line();
        break;
      }
      case 'tr': {
        out.line();
        const cells = [...el.children].filter((c) => /^t[dh]$/i.test(c.tagName));
        cells.forEach((cell, i) => {
          if (i > 0) out.raw(' | ');
          const sub = new TextBuilder();
          walk(cell, sub, base, mode);
          out.raw(sub.finish().replace(/\s*\n+\s*/g, ' '));
        });
        out.line();
        break;
      }
      case 'pre': {
        out.block();
        walk(el, out, base, { pre: true });
        out.block();
        break;
      }
      case 'a': {
        const href = el.getAttribute('href');
        const target = href ? absolute(href, base) : undefined;
        const sub = new TextBuilder();
        walk(el, sub, base, mode);
        const text = sub.finish().replace(/\s+/g, ' ');
        if (target && text && text !== target) out.raw(`[${text}](${target})`);
        else if (text || target) out.inline(text || target || '');
        break;
      }
      case 'img': {
        const alt = clean(el.getAttribute('alt') ?? '');
        if (alt) out.inline(`[image: ${alt}]`);
        break;
      }
      case 'td': case 'th':
        walk(el, out, base, mode);
        out.inline(' ');
        break;
      default:
        if (BLOCK.has(tag)) {
          out.block();
          walk(el, out, base, mode);
          out.block();
        } else {
          walk(el, out, base, mode);
        }
    }
  }
}

function absolute(href: string, base: string | undefined): string | undefined {
  const trimmed = href.trim();
  if (trimmed === '' || trimmed.startsWith('#') || /^(javascript|mailto|tel|data):/i.test(trimmed)) return undefined;
  try {
    const url = new URL(trimmed, base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Collects text with collapsed whitespace, line breaks and blank lines between blocks. */
class TextBuilder {
  private readonly parts: string[] = [];
  /** Newlines owed before the next text: 1 = new line, 2 = blank line. */
  private pendingBreak = 0;
  private pendingSpace = false;
  private last = '';

  /** Text as it appears in HTML: runs of whitespace count as one space (kept as is in <pre>). */
  inline(text: string, pre = false): void {
    if (pre) {
      if (text !== '') this.emit(text);
      return;
    }
    const collapsed = text.replace(/\s+/g, ' ');
    if (collapsed === '') return;
    if (collapsed.startsWith(' ')) this.pendingSpace = true;
    const core = collapsed.trim();
    if (core !== '') this.emit(core);
    if (collapsed.endsWith(' ')) this.pendingSpace = true;
  }

  /** Text written exactly (markers such as "# ", "- ", " | "). */
  raw(text: string): void {
    this.emit(text);
  }

  lineBreak(): void {
    if (this.last !== '') this.pendingBreak = Math.max(this.pendingBreak, 1);
    this.emitBreak();
  }

  line(): void {
    this.pendingBreak = Math.max(this.pendingBreak, 1);
  }

  block(): void {
    this.pendingBreak = 2;
  }

  finish(): string {
    return this.parts
      .join('')
      .replace(/[ \t]+\n/g, '\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim();
  }

  private emitBreak(): void {
    if (this.last !== '' && this.pendingBreak > 0) {
      this.parts.push('\n'.repeat(this.pendingBreak));
      this.last = '\n';
    }
    this.pendingBreak = 0;
    this.pendingSpace = false;
  }

  private emit(text: string): void {
    if (text === '') return;
    if (this.last !== '') {
      if (this.pendingBreak > 0) this.parts.push('\n'.repeat(this.pendingBreak));
      else if (this.pendingSpace && !/\s$/.test(this.last) && !/^\s/.test(text)) this.parts.push(' ');
    }
    this.pendingBreak = 0;
    this.pendingSpace = false;
    this.parts.push(text);
    this.last = text;
  }
}

function clean(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
