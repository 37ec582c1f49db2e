// What the dashboard's browser tests evaluate in the page to check text contrast.

/**
 * Text whose contrast with what is behind it is below WCAG AA (4.5:1, 3:1 for large text), as
 * `text (ratio)`. Backgrounds are composited up the ancestors onto the page's canvas.
 */
export const CONTRAST_FAILURES = `(() => {
  const parse = (value) => {
    const match = /rgba?\\(([^)]+)\\)/.exec(value);
    if (match === null) return undefined;
    const parts = match[1].split(/[\\s,/]+/).filter(Boolean).map(Number);
    return { r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1 };
  };
  const over = (top, bottom) => ({
    r: top.r * top.a + bottom.r * (1 - top.a),
    g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a),
    a: 1,
  });
  const luminance = ({ r, g, b }) => {
    const channel = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  };
  const dark = matchMedia('(prefers-color-scheme: dark)').matches;
  const canvas = dark ? { r: 18, g: 18, b: 18, a: 1 } : { r: 255, g: 255, b: 255, a: 1 };
  const behind = (element) => {
    const layers = [];
    for (let node = element; node !== null; node = node.parentElement) {
      const color = parse(getComputedStyle(node).backgroundColor);
      if (color !== undefined && color.a > 0) {
        layers.push(color);
        if (color.a >= 1) break;
      }
    }
    return layers.reverse().reduce((bottom, top) => over(top, bottom), canvas);
  };
  const failures = [];
  for (const element of document.querySelectorAll('body *')) {
    const text = [...element.childNodes].filter((node) => node.nodeType === 3).map((node) => node.textContent).join('').trim();
    if (text === '' || element.closest('[disabled], [aria-hidden="true"], canvas, option') !== null) continue;
    const style = getComputedStyle(element);
    if (style.visibility === 'hidden' || element.getClientRects().length === 0) continue;
    const background = behind(element);
    const foreground = over(parse(style.color), background);
    const [light, darker] = [luminance(foreground), luminance(background)].sort((a, b) => b - a);
    const ratio = (light + 0.05) / (darker + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) failures.push(text.slice(0, 40) + ' (' + ratio.toFixed(2) + ')');
  }
  return failures;
})()`;
