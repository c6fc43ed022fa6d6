extension PageAssets {
    static let domJS = #"""
// Small DOM helpers. Text goes in as text, never as HTML: names and chat come from users.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'style') Object.assign(el.style, value);
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function panel(id, title, ...children) {
  return h('section', { id, class: 'panel' }, h('h2', {}, title), ...children);
}
"""#
}
