extension PageAssets {
    static let clockJS = #"""
// The server's clock. Times in the read model (the class start, the carousel's next turn)
// are the server's, so the page counts from them with the offset the welcome gave: a
// browser whose clock is off still shows the right timers.
let offset = 0;

export function syncClock(serverMillis) {
  if (Number.isFinite(serverMillis)) offset = serverMillis - Date.now();
}

export function now() {
  return Date.now() + offset;
}

// m:ss or h:mm:ss, as the terminal writes a duration.
export function duration(millis) {
  const total = Math.floor(Math.abs(millis) / 1000);
  const [hours, minutes, seconds] = [Math.floor(total / 3600), Math.floor(total / 60) % 60, total % 60];
  const pad = (value) => String(value).padStart(2, '0');
  return hours > 0 ? `${hours}:${pad(minutes)}:${pad(seconds)}` : `${minutes}:${pad(seconds)}`;
}

export function timeOfDay(millis) {
  return new Date(millis).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}
"""#
}
