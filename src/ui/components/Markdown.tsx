// Markdown as a gate's prompt or a step's text output is written (Conductor renders it): no raw HTML
// (markdown-it with `html: false` escapes it), links only to http(s) and mailto, opening apart with no
// opener or referrer, and images shown as links to them, never loaded.

import { useEffect, useState } from 'react';

type Render = (text: string) => string;
let loaded: Promise<Render> | undefined;

/** markdown-it is most of a run page's weight: loaded once, when a Markdown text is first shown. */
function loadRenderer(): Promise<Render> {
  loaded ??= import('./markdown-render.js').then((module) => module.renderMarkdown);
  return loaded;
}

/** `text` as Markdown once the renderer is loaded; until then (and if it fails to load) as plain text. */
export function Markdown({ text, className }: { text: string; className?: string }) {
  const [html, setHtml] = useState<string>();
  useEffect(() => {
    let current = true;
    void loadRenderer().then(
      (render) => {
        if (current) setHtml(render(text));
      },
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [text]);
  const classes = ['markdown', className].filter(Boolean).join(' ');
  if (html === undefined) return <div className={`${classes} plain`}>{text}</div>;
  // The HTML is markdown-it's own, raw HTML of the text escaped: see markdown-render.ts.
  return <div className={`${classes} rendered`} dangerouslySetInnerHTML={{ __html: html }} />;
}
