extension PageAssets {
    static let socketJS = #"""
// The page's one link to the web process: read models in, actions out. The server holds
// the classroom session; this socket only reconnects to the server when it drops
// (the server's session itself fails over between nodes).
export class ClassroomSocket {
  constructor(login, { onModel, onWelcome, onEnded, onLink }) {
    this.login = login;
    this.handlers = { onModel, onWelcome, onEnded, onLink };
    this.pending = new Map();
    this.nextId = 1;
    this.retryMillis = 500;
    this.ended = false;
  }

  connect() {
    this.handlers.onLink('connecting');
    const ws = new WebSocket(`ws://${location.host}/ws`);
    this.ws = ws;
    ws.onopen = () => {
      this.retryMillis = 500;
      ws.send(JSON.stringify({ type: 'login', ...this.login }));
    };
    ws.onmessage = (event) => this.receive(JSON.parse(event.data));
    ws.onclose = () => {
      for (const { reject } of this.pending.values()) reject({ code: 'unavailable', message: 'the page lost the server: try again' });
      this.pending.clear();
      if (this.ended) return;
      this.handlers.onLink('reconnecting');
      setTimeout(() => this.connect(), this.retryMillis);
      this.retryMillis = Math.min(this.retryMillis * 2, 5000);
    };
  }

  receive(message) {
    if (this.closed) return;
    switch (message.type) {
      case 'model': this.handlers.onModel(message); break;
      case 'welcome': this.handlers.onWelcome(message); break;
      case 'ended': this.ended = true; this.handlers.onEnded(message); break;
      case 'result': {
        const waiting = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (!waiting) return;
        if (message.ok) waiting.resolve(message); else waiting.reject(message);
        break;
      }
    }
  }

  // Sends an action; resolves when the cluster acknowledged it, rejects with {code, message}.
  act(action) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.ws?.readyState !== WebSocket.OPEN) {
        reject({ code: 'unavailable', message: 'not connected to the server yet' });
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ type: 'action', id, ...action }));
    });
  }

  // Ends this socket for good (the server's session and its pool end with it).
  close() {
    this.ended = true;
    this.closed = true;
    this.ws?.close(1000);
  }

  showPage(index) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: 'page', index }));
  }
}
"""#
}
