extension PageAssets {
    static let themeJS = #"""
// The terminal's JSON theme (docs/CUSTOMIZE.md), read by the page: glyphs, colours,
// column order, and each component's visible and enabled switches.
const NAMES = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];
const NORMAL = ['#000000', '#c62828', '#2e7d32', '#b58900', '#1e5bc6', '#9c27b0', '#00838f', '#dddddd'];
const BRIGHT = ['#555555', '#ef5350', '#66bb6a', '#fdd835', '#42a5f5', '#ce93d8', '#4dd0e1', '#ffffff'];

export async function loadTheme() {
  const response = await fetch('/theme.json');
  return response.json();
}

// A theme colour name as CSS ('default' inherits).
export function css(name) {
  if (!name || name === 'default' || name === 'none') return '';
  if (name.startsWith('#')) return name;
  if (name === 'gray' || name === 'grey') return '#888888';
  if (name.startsWith('bright-')) return BRIGHT[NAMES.indexOf(name.slice(7))] ?? '';
  if (NAMES.includes(name)) return NORMAL[NAMES.indexOf(name)];
  const index = Number(name);
  if (Number.isInteger(index) && index >= 0 && index < 16) return (index < 8 ? NORMAL : BRIGHT)[index % 8];
  return '';
}

// The theme's glyph for a stream state ('live', 'privilege-off', 'device-off', 'inoperable').
export function streamGlyph(glyphs, state) {
  const key = { 'live': 'live', 'privilege-off': 'privilegeOff', 'device-off': 'deviceOff', 'inoperable': 'inoperable' }[state];
  return glyphs?.[key] ?? { text: state, color: 'default' };
}

export function section(theme, name) {
  const value = theme?.[name] ?? {};
  return { visible: value.visible !== false, enabled: value.enabled !== false, ...value };
}

export function applyColors(theme) {
  const root = document.documentElement.style;
  const bar = section(theme, 'stateBar');
  if (css(bar.background)) root.setProperty('--bar-bg', css(bar.background));
  if (css(bar.foreground)) root.setProperty('--bar-fg', css(bar.foreground));
  const roster = section(theme, 'roster');
  if (css(roster.localUserColor)) root.setProperty('--local', css(roster.localUserColor));
  if (css(roster.offlineColor)) root.setProperty('--offline', css(roster.offlineColor));
  const hands = section(theme, 'hands');
  if (css(hands.nameColor)) root.setProperty('--hand', css(hands.nameColor));
}
"""#
}
