extension PageAssets {
    static let styleCSS = #"""
:root { --bar-bg: #2050a0; --bar-fg: #fff; --local: #1aa; --offline: #888; --hand: #c90; font-family: system-ui, sans-serif; }
body { margin: 0; background: #f4f5f7; color: #222; }
.login { max-width: 32rem; margin: 4rem auto; display: grid; gap: .8rem; background: #fff; padding: 2rem; border-radius: 8px; }
.login label { display: grid; gap: .3rem; }
.error { color: #c22; min-height: 1.2em; }
.state-bar { display: flex; gap: 1.5rem; align-items: center; padding: .5rem 1rem; background: var(--bar-bg); color: var(--bar-fg); }
.state-bar .room { font-weight: 600; }
.state-bar .connection[data-state="connected"] { color: #9f9; }
.state-bar .connection[data-state="reconnecting"], .state-bar .connection[data-state="connecting"] { color: #fd6; }
.state-bar .connection[data-state="suspended"] { color: #fa6; }
.state-bar .connection[data-state="aborted"] { color: #f99; }
.scene { display: grid; grid-template-columns: 1fr 20rem; gap: 1rem; padding: 1rem; }
.scene > .main { display: grid; gap: 1rem; align-content: start; }
.scene > .side { display: grid; gap: 1rem; align-content: start; }
.panel { background: #fff; border-radius: 8px; padding: .8rem; }
.panel h2 { font-size: .9rem; margin: 0 0 .5rem; text-transform: uppercase; letter-spacing: .05em; color: #555; }
.stage-strip { display: flex; gap: .6rem; flex-wrap: wrap; }
.seat { width: 9rem; height: 6rem; border-radius: 6px; background: #223; color: #fff; display: grid; place-content: center; text-align: center; }
.seat.empty { background: #dde; color: #889; }
.seat.big { width: 100%; height: 14rem; font-size: 1.3rem; }
.one-to-one .tiles { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
table.roster { width: 100%; border-collapse: collapse; font-size: .9rem; }
table.roster th, table.roster td { text-align: left; padding: .3rem .4rem; border-bottom: 1px solid #eee; }
table.roster tr.local td.name { color: var(--local); font-weight: 600; }
table.roster tr.offline td.name { color: var(--offline); }
table.roster button { font-size: .75rem; margin: 0 .1rem; }
.counts { display: flex; gap: 1.5rem; }
.pager { display: flex; gap: .5rem; align-items: center; margin-top: .5rem; }
.hands li { color: var(--hand); }
.invitations li.mine { font-weight: bold; }
.invitations button { margin-left: 0.4em; }
.chat-log { list-style: none; padding: 0; margin: 0; max-height: 16rem; overflow-y: auto; font-size: .9rem; }
.chat-log .sent, .chat-log .received { font-style: italic; }
.chat-form { display: flex; gap: .3rem; margin-top: .5rem; }
.chat-form input { flex: 1; }
.controls { display: flex; gap: .5rem; flex-wrap: wrap; }
.notice { padding: .4rem 1rem; min-height: 1.2em; }
.notice.refused { background: #fee; color: #a11; }
.notice.ok { background: #efe; color: #161; }
.dimmed { opacity: .5; pointer-events: none; }
.link-lost { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; padding: .6rem 1rem; background: #a11; color: #fff; }
.link-lost button { margin-left: auto; font-weight: 600; }
.inline-form { display: flex; gap: .4rem; align-items: center; flex-wrap: wrap; margin-top: .5rem; }
.inline-form input.short { width: 5rem; }
.group-controls { display: grid; gap: .2rem; justify-items: start; }
.groups { margin: 0; padding-left: 1.2rem; }
.groups li button { margin-left: .5rem; font-size: .75rem; }
.chat-log .sent { color: #555; }
.chat-log .received { font-weight: 600; }
.empty { color: #888; }
"""#
}
