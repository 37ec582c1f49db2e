// The Markdown renderer behind Markdown.tsx, loaded as its own chunk by the pages that show Markdown.

import MarkdownIt from 'markdown-it';

const LINK_SCHEMES = /^(https?:|mailto:)/i;

function createRenderer() {
  const md = new MarkdownIt({ html: false, linkify: true, breaks: true });
  // Any other scheme (javascript:, data:, vbscript:, file:) and relative links stay text.
  md.validateLink = (url) => LINK_SCHEMES.test(url.trim());
  const renderToken = md.renderer.renderToken.bind(md.renderer);
  md.renderer.rules.link_open = (tokens, index, options) => {
    const token = tokens[index];
    if (token !== undefined) {
      token.attrSet('rel', 'noopener noreferrer');
      token.attrSet('target', '_blank');
    }
    return renderToken(tokens, index, options);
  };
  // An image is a link to it, labelled with its alt text: nothing is fetched from another origin.
  md.renderer.rules.image = (tokens, index) => {
    const token = tokens[index];
    const src = String(token?.attrGet('src') ?? '');
    const alt = md.utils.escapeHtml(token?.content === '' ? 'image' : (token?.content ?? 'image'));
    if (!LINK_SCHEMES.test(src)) return `[${alt}]`;
    return `<a href="${md.utils.escapeHtml(src)}" rel="noopener noreferrer" target="_blank">[image: ${alt}]</a>`;
  };
  return md;
}

let renderer: ReturnType<typeof createRenderer> | undefined;

/** `text` as safe HTML (see above). */
export function renderMarkdown(text: string): string {
  renderer ??= createRenderer();
  return renderer.render(text).trim();
}
