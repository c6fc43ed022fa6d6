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

// An input whose text survives redraws (the page is drawn again on every read model):
// kept in `draft` under its id.
export function kept(draft, id, attrs = {}) {
  return h('input', { ...attrs, id, value: draft[id] ?? '', oninput: (event) => { draft[id] = event.target.value; } });
}

// A select whose choice survives redraws; `options` are [value, label] pairs.
export function keptSelect(draft, id, options, attrs = {}) {
  const select = h('select', { ...attrs, id, onchange: (event) => { draft[id] = event.target.value; } },
    options.map(([value, label]) => h('option', { value }, label)));
  if (options.some(([value]) => value === draft[id])) select.value = draft[id];
  return select;
}

// Empties kept inputs, in the draft and on the page.
export function clear(draft, ...ids) {
  for (const id of ids) {
    draft[id] = '';
    const el = document.getElementById(id);
    if (el) el.value = '';
  }
}
"""#
}
