#!/usr/bin/env python3
"""Homeroom interop client, written from docs/PROTOCOL.md alone.

Joins one room through two nodes (a teacher through node A, a student through
node B), follows live deltas, sends acknowledged writes, checks refusals and
error codes, repairs a simulated loss, resumes through the other node, checks
that rewards stay exact while the nodes fold them away (reward floors),
takes turns on a lock with fencing (acquire, renew, release, revoke, guarded
property writes and their refusals, one lock per key, releases that name their
grant, bounded fences, a split through node A's fault hook, a lapse that sticks and
a holder back within its TTL, the derivation of "held" against `homeroom lock
--json`), and checks that every view converges on the roster it expects. A
breakout-group phase follows in a room of its own (groups and assignments, their
bounds, `homeroom group --json` and `group broadcast`, chat in a group's room
`<room>:<id>`, who may join which group room and who may write there (another
group's room, a move, a leave), a ban in the main room, a removal and a
re-creation, a removal in a room that became a lecture hall, the end and what
arrives after it). With --closed-node,
a closed-room phase follows on nodes started with --token-key and --cluster-key
("Authentication", "Closed rooms"): joins with and without tokens, TopicKeys,
sealed client topics opened with homeroom_wire.open_topic, what a SUB socket
subscribed to everything sees, forgeries, the key change after a ban, and a
class token at the doors of group rooms (another group's, a banned user's, a
teacher's visit, a room with no live group) and in them (a g1 student's sync,
digest and write in g2's room).
With --tls-node, a TLS phase follows on a node listening and publishing on
tls+tcp:// ("TLS"): pynng (nng with mbedtls) joins, writes and follows live
deltas over TLS, and a client with another CA, a plain tcp:// dial to the TLS
port and a TLS dial to a plain port get no reply. With --homeroom-bin, a
spent-fences phase follows on a node of its own (this client stands in for a peer
node whose patch brings lock fences near 2^62: limit-reached for a new grant, the
last grant, its holder's renewal), and a retirement phase.
Every peer's SUB socket follows its room stream when the hello says room_streams
("Room streams": ws://, or wss:// for tls+tcp://, at /v1/rooms/<room>/users/<user>
on the publish port), and its publish address otherwise; a room-streams step in the
first room, and a check in the closed-room phase, make sure that a stream carries
its room's topics and nothing else.

The reference module `homeroom_wire` is loaded from the ```python block of the
section "A Python client" in docs/PROTOCOL.md, so that code is tested too; the
protobuf classes are generated with protoc into a temporary directory.

    python_client.py --node-a tcp://127.0.0.1:7400 --node-b tcp://127.0.0.1:7410 --reward-window 1

(the nodes started with `--reward-window-ms 1000 --max-clock-drift-ms 1000`, as Tests/interop/run.sh does,
so that they fold rewards within seconds). Exit status: 0 when every check
passed, 1 when one failed, 2 on a usage or setup error. Every wait is bounded;
the whole run takes a few seconds plus the waits for the reward folds and the
session lease.
"""
import argparse
import faulthandler
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import tempfile
import time
import types
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Budgets (docs/PROTOCOL.md, "Timeouts and retries").
REQUEST_TIMEOUT_MS = 1000
JOIN_TIMEOUT_MS = 3000
WAIT_SECONDS = 3.0              # for a change to show up on a SUB socket
PERIODIC_SYNC_SECONDS = 1.0
MIN_SYNC_INTERVAL = 0.1
RUN_DEADLINE_SECONDS = 45.0           # without the wait for reward folds (fold_wait(), below); with a lock's 10 s TTL
GROUPS_DEADLINE_SECONDS = 25.0        # the breakout-group phase (run_groups)
CLOSED_DEADLINE_SECONDS = 20.0        # the closed-room phase (run_closed), when it runs
TLS_DEADLINE_SECONDS = 15.0           # the TLS phase (run_tls), when it runs
RETIRE_DEADLINE_SECONDS = 40.0        # the retirement phase (run_retire), when it runs
FENCES_DEADLINE_SECONDS = 10.0        # the spent-fences phase (run_spent_fences), when it runs
PLACEMENT_DEADLINE_SECONDS = 20.0     # the placement phase (run_placement), when it runs


def fold_wait(reward_window):
    """How long the reward-fold check waits: a reward is foldable 1-3 reward windows after it was
    issued, and a node folds once 8 of its rewards are foldable, or all are and the newest is 5 s old."""
    return 17.0 + 3 * reward_window


class SetupError(Exception):
    pass


class Abort(Exception):
    """A check that later steps depend on failed."""


def load_protocol(doc_path, proto_dir, gen_dir):
    """Generates the protobuf classes and loads `homeroom_wire` from the document."""
    protoc = shutil.which("protoc")
    if protoc is None:
        raise SetupError("protoc not found: install Debian's protobuf-compiler")
    protos = sorted(glob.glob(os.path.join(proto_dir, "homeroom", "v1", "*.proto")))
    if not protos:
        raise SetupError(f"no .proto files under {proto_dir}/homeroom/v1")
    subprocess.run([protoc, f"--python_out={gen_dir}", "-I", proto_dir, *protos], check=True)
    sys.path.insert(0, gen_dir)
    text = open(doc_path, encoding="utf-8").read()
    section = text.find("\n## A Python client")
    if section < 0:
        raise SetupError(f"{doc_path} has no section 'A Python client'")
    match = re.search(r"```python\n(.*?)\n```", text[section:], re.S)
    if match is None:
        raise SetupError(f"{doc_path}: no ```python block in 'A Python client'")
    module = types.ModuleType("homeroom_wire")
    module.__file__ = doc_path + "#a-python-client"
    sys.modules["homeroom_wire"] = module
    exec(compile(match.group(1), module.__file__, "exec"), module.__dict__)
    return module


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"  PASS  {name}" + (f"  ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            self.failures.append(name)
            print(f"  FAIL  {name}" + (f"  ({detail})" if detail else ""), flush=True)
        return ok

    def require(self, name, ok, detail=""):
        if not self.check(name, ok, detail):
            raise Abort(name)


class Unavailable(Exception):
    pass


TLS_CLOSE_SECONDS = 3.0
tls_close_wedged = []                   # set once a close did not return: the rest are not waited for


def close_tls_socket(sock, label):
    """Closes a pynng socket with TLS on a thread of its own, waiting at most TLS_CLOSE_SECONDS. pynng 0.8.0's
    nng (its own build, with its own mbedtls) sometimes never returns from close() on a tls+tcp:// socket: about
    one run in ten, every check of the TLS phase passed, the main thread in nng's close and no Python frame
    elsewhere, and every later close and dial of that process hung as well. That is the client library wedged,
    not the node (it has answered everything by then). So the TLS phase runs last, a close that does not return
    is reported and left to the process's exit (os._exit), and once one has not, the rest are not waited for."""
    if tls_close_wedged:
        return
    closer = threading.Thread(target=sock.close, name=f"close {label}", daemon=True)
    closer.start()
    closer.join(TLS_CLOSE_SECONDS)
    if closer.is_alive():
        tls_close_wedged.append(label)
        print(f"  [{label}] pynng did not close a tls+tcp:// socket within {TLS_CLOSE_SECONDS:.0f} s (the client "
              "library wedged); this and the remaining TLS sockets are left open until the client exits", flush=True)


ROOM_STREAM_SCHEMES = (("tcp://", "ws://"), ("tcp4://", "ws://"), ("tls+tcp://", "wss://"))


def room_stream_url(publish_address, room, user=None):
    """The room stream of `room`, with `user`'s private stream in it when given (docs/PROTOCOL.md, "Room streams"):
    SP over WebSocket on the publish port, ws:// for tcp://, wss:// for tls+tcp://, at /v1/rooms/<room>[/users/<user>]
    with percent-encoded segments. None for an address with no WebSocket form (ipc://, inproc://)."""
    for plain, web in ROOM_STREAM_SCHEMES:
        if publish_address.startswith(plain):
            path = "/v1/rooms/" + urllib.parse.quote(room, safe=":")
            if user is not None:
                path += "/users/" + urllib.parse.quote(user, safe=":")
            return web + publish_address[len(plain):] + path
    return None


def message_topic(hw, message):
    """What a SUB socket subscribed to b"" got, by topic: b"01" (node topic), b"02" (heartbeat), else the client topic
    (`<room> 00` or `@<room> 00 <user> 00`), or the message's first bytes when it has none."""
    if message[:1] in (b"\x01", b"\x02"):
        return b"%02d" % message[0]
    parts = hw.split_client_topic(message)
    return parts[0] if parts is not None else message[:16]


def by_topic(hw, messages):
    """topic -> (messages, bytes), for check details."""
    out = {}
    for m in messages:
        topic = message_topic(hw, m)
        n, size = out.get(topic, (0, 0))
        out[topic] = (n + 1, size + len(m))
    return out


def raw_sub(pynng, address):
    """A SUB socket subscribed to everything (b""), dialed (block=True) to `address`."""
    sock = pynng.Sub0(recv_max_size=0, recv_buffer_size=8192, recv_timeout=10)
    sock.subscribe(b"")
    try:
        sock.dial(address, block=True)
    except pynng.NNGException:
        sock.close()
        raise
    return sock


def drain_into(pynng, socks, got):
    """Appends what each SUB socket in `socks` (name -> socket) has queued to got[name]; returns False (a predicate step)."""
    for name, sock in socks.items():
        while True:
            try:
                got[name].append(sock.recv())
            except pynng.Timeout:
                break
    return False


class Peer:
    """One user in one room through one node: Flows 1 to 7 of docs/PROTOCOL.md."""

    def __init__(self, hw, pynng, room_id, user, role, name, label, token=None, tls_config=None):
        self.hw, self.pynng = hw, pynng
        self.tls_config = tls_config    # a pynng.TLSConfig for tls+tcp:// nodes ("TLS"): on every socket this peer opens
        self.env = hw.envelope_pb2
        self.room = hw.Room(room_id)
        self.user, self.role, self.name, self.label = user, role, name, label
        self.req = self.sub = None
        self.node = None                # hello reply (Heartbeat)
        self.sub_address = None         # what the SUB socket dialed: the room stream, or the publish address
        self.session = None
        self.connections = 0
        self.counter = 0
        self.issued_at = {}             # counter -> issued_at_ms of a reward: kept with the counter for retries
        self.request_id = 0
        self.last_sync = 0.0
        self.sync_wanted = False
        self.drop_ops = set()           # simulated SUB loss: drop batches holding these operations
        self.dropped = 0
        self.repairs = []               # why each sync after a possible loss was made
        self.hold_sync = False          # test hook: no sync until released
        self.topic_patches = 0
        self.live_batches = 0           # delta batches taken from the SUB socket
        self.lease = False              # name the session in syncs (Flow 5, "Session leases")
        # Closed rooms ("Authentication", "Closed rooms"): with a token, every request carries it in
        # `credential`, and every client-topic message goes through homeroom_wire.open_topic.
        self.token = token.encode() if isinstance(token, str) else token
        self.keys = None                # TopicKeys of the latest join or sync reply that had them
        self.statuses = {}              # open_topic status -> how many messages got it
        self.sealed = []                # the latest (message, status, envelope bytes or None)
        self.key_changes = []           # (reply kind, old room key id, new room key id) when keys changed
        self.resync = False             # a message under a key id we do not hold: sync at once

    def log(self, text):
        print(f"  [{self.label}] {text}", flush=True)

    # -- requests

    def request(self, body_setter, room=True, timeout_ms=REQUEST_TIMEOUT_MS, sock=None, attempts=2):
        env = self.env.Envelope(protocol_version=1, room_id=self.room.id if room else "")
        body_setter(env)
        return self.call(env, timeout_ms, sock, attempts)

    def call(self, env, timeout_ms=REQUEST_TIMEOUT_MS, sock=None, attempts=2):
        """Sends one request and returns the reply envelope; resends the same bytes after a timeout."""
        sock = sock or self.req
        if self.token is not None and not env.credential:
            env.credential = self.token                                           # "Authentication"
        data = env.SerializeToString()
        for attempt in range(attempts):
            sock.recv_timeout = timeout_ms
            try:
                sock.send(data)
                raw = sock.recv()
            except self.pynng.Timeout:
                self.log(f"request timed out after {timeout_ms} ms (attempt {attempt + 1} of {attempts})")
                continue
            reply = self.env.Envelope()
            reply.ParseFromString(raw)
            return reply
        raise Unavailable(f"no reply from the node after {attempts} attempts")

    def hello(self, sock, attempts=2):
        reply = self.request(lambda e: e.heartbeat.SetInParent(), room=False, sock=sock, attempts=attempts)
        if reply.WhichOneof("body") != "heartbeat":
            raise Unavailable(f"hello answered with {reply.WhichOneof('body')}")
        return reply.heartbeat

    # -- connecting (Flows 1 to 3, and 7)

    def socket(self, kind, **options):
        """A new pynng socket (kind: pynng.Req0 or pynng.Sub0), with this peer's TLS configuration if it has one."""
        if self.tls_config is not None:
            options["tls_config"] = self.tls_config
        return kind(**options)

    def connect(self, address, resume=False):
        """Hello, subscribe, join. Returns the join reply envelope."""
        self.close_sockets()
        self.req = self.socket(self.pynng.Req0, recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS,
                               reconnect_time_min=50, reconnect_time_max=500)
        self.req.dial(address, block=True)
        self.node = self.hello(self.req)                                         # Flow 1
        self.sub = self.socket(self.pynng.Sub0, recv_max_size=0, recv_buffer_size=8192, recv_timeout=20,
                               reconnect_time_min=50, reconnect_time_max=500)
        self.sub.subscribe(self.room.id.encode() + b"\x00")                      # Flow 2: before the join
        self.sub.subscribe(self.private_topic())                                  # ... and the private stream (Flow 8)
        # "Room streams": a node whose hello says room_streams serves this room's topic and this user's private
        # topic, and nothing else, at ws://<publish host:port>/v1/rooms/<room>/users/<user> (wss:// for tls+tcp://,
        # same certificate: pynng's wss:// takes the same TLSConfig). An older node: its publish address, as before.
        stream = room_stream_url(self.node.publish_address, self.room.id, self.user) if self.node.room_streams else None
        self.sub_address = stream or self.node.publish_address
        self.sub.dial(self.sub_address, block=True)
        self.connections += 1
        self.session = f"{self.user}-{random.getrandbits(32):08x}-{self.connections}"

        def join(e):
            j = e.join_request
            j.user, j.role, j.session, j.name = self.user, self.role, self.session, self.name
            if resume:
                self.room.seen.to_proto(j.resume)
        reply = self.request(join, timeout_ms=JOIN_TIMEOUT_MS)                    # Flow 3
        kind = reply.WhichOneof("body")
        if kind == "join_response":
            self.take_keys(reply.join_response, "join_response")
            state = reply.join_response.WhichOneof("state")
            self.room.merge_patch(getattr(reply.join_response, state))           # adopt its seen
            self.last_sync = time.monotonic()
            self.sync_wanted = True                                               # slow-joiner window
            self.pump()
        return reply

    def private_topic(self):
        return b"@" + self.room.id.encode() + b"\x00" + self.user.encode() + b"\x00"

    def close_sockets(self):
        for sock in (self.sub, self.req):
            if sock is None:
                pass
            elif self.tls_config is not None:
                close_tls_socket(sock, self.label)
            else:
                sock.close()
        self.sub = self.req = None

    # -- live deltas and repair (Flows 4 and 5)

    def pump(self, budget=0.0):
        """Reads the SUB socket until it is idle (and at least `budget` seconds), then syncs if needed."""
        until = time.monotonic() + budget
        while True:
            try:
                message = self.sub.recv()
            except self.pynng.Timeout:
                if time.monotonic() >= until:
                    break
                continue
            self.receive(message)
        now = time.monotonic()
        if self.hold_sync:
            return
        if self.resync or (self.sync_wanted and now - self.last_sync >= MIN_SYNC_INTERVAL) \
                or now - self.last_sync >= PERIODIC_SYNC_SECONDS:
            self.sync()

    def take_keys(self, response, kind):
        """Keeps the keys of a join or sync reply that has them (Closed rooms, step 1)."""
        if response.HasField("keys"):
            keys = self.env.TopicKeys()
            keys.CopyFrom(response.keys)
            if self.keys is not None and (keys.room_key_id, keys.user_key_id) != (self.keys.room_key_id, self.keys.user_key_id):
                self.key_changes.append((kind, self.keys.room_key_id, keys.room_key_id))
            self.keys = keys

    def open_sealed(self, message):
        """Closed rooms, steps 2 to 4: the envelope bytes of a message on our topics, or None."""
        parts = self.hw.split_client_topic(message)
        if parts is None:
            return None
        topic, payload, private = parts
        if topic != (self.private_topic() if private else self.room.id.encode() + b"\x00"):
            return None
        status, body = self.hw.open_topic(topic, payload, self.keys, private)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        self.sealed = self.sealed[-199:] + [(message, status, body)]
        if status == "unknown-key":
            self.resync = True                                                    # the keys changed: sync now
        return body if status in ("opened", "clear") else None

    def receive(self, message):
        if self.token is not None:                                                # a closed room
            body = self.open_sealed(message)
            if body is None:
                return
        elif message.startswith(self.private_topic()):                            # our private stream: peer messages
            body = message[len(self.private_topic()):]
        else:
            end = message.find(b"\x00")
            if end < 0 or message[:end] != self.room.id.encode():
                return
            body = message[end + 1:]
        env = self.env.Envelope()
        try:
            env.ParseFromString(body)
        except Exception:                                                         # noqa: BLE001 - ignore what does not decode
            return
        if env.room_id != self.room.id:
            return
        kind = env.WhichOneof("body")
        if kind == "delta_batch":
            self.live_batches += 1
            ops = {d.WhichOneof("op") for d in env.delta_batch.deltas}
            if ops & self.drop_ops:
                self.drop_ops -= ops
                self.dropped += 1
                self.log(f"simulated SUB loss of a batch with {sorted(ops)}")
                return
            for d in self.room.apply_batch(env.delta_batch):
                if d["skip"]:
                    self.sync_wanted = True
                    self.repairs.append(f"skip before {d['replica']:x}:{d['sequence']}")
        elif kind in ("patch", "snapshot"):
            self.room.merge_patch(getattr(env, kind), adopt_seen=False)          # never adopt a topic patch's seen
            self.topic_patches += 1
            self.sync_wanted = True
            self.repairs.append("topic patch")

    def sync(self):
        def body(e):
            self.room.seen.to_proto(e.sync_request.seen)
            e.sync_request.user = self.user                                       # include our peer messages
            if self.lease:
                e.sync_request.session = self.session                             # renew our session's lease
        reply = self.request(body)
        if reply.WhichOneof("body") != "sync_response":
            raise Unavailable(f"sync answered with {reply.WhichOneof('body')}: {reply.error.code}")
        response = reply.sync_response
        self.take_keys(response, "sync_response")
        if response.HasField("patch"):
            self.room.merge_patch(response.patch)                                 # computed against our seen: adopt
        for batch in response.batches:
            self.room.apply_batch(batch)
        self.last_sync = time.monotonic()
        self.sync_wanted = False
        self.resync = False

    def wait_for(self, predicate, seconds=WAIT_SECONDS):
        deadline = time.monotonic() + seconds
        while True:
            self.pump(0.02)
            if predicate():
                return True
            if time.monotonic() >= deadline:
                return False

    # -- writes (Flow 6)

    def next_counter(self):
        self.counter = max(self.counter + 1, time.time_ns() // 1000)
        return self.counter

    def write(self, op, target=None, counter=None, role=None, author=None, via=None, request_id=None, edit=None,
              issued_at=None, **fields):
        """Sends an acknowledged write; returns (reply envelope, counter). `via`: another node's listen address;
        `edit(body)` sets what keyword fields cannot (sub-messages, repeated fields). A reward carries
        `issued_at_ms` (Flow 6): `issued_at`, else the value first sent with this counter, else the clock now."""
        counter = counter if counter is not None else self.next_counter()
        if op == "reward":
            if issued_at is None:
                issued_at = self.issued_at.get(counter, time.time_ns() // 1_000_000)
            self.issued_at.setdefault(counter, issued_at)
            fields["issued_at_ms"] = issued_at
        if request_id is None:
            self.request_id += 1
            request_id = self.request_id
        env = self.hw.write_request(self.room.id, request_id, author or self.user, role or self.role,
                                    counter, op, target=target, **fields)
        if edit is not None:
            edit(getattr(env.write_request.write, op))
        if via is None:
            return self.call(env), counter
        sock = self.socket(self.pynng.Req0, recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
        try:
            sock.dial(via, block=True)
            return self.call(env, sock=sock), counter
        finally:
            sock.close()

    def seen_dot(self, dot):
        return self.room.seen.contains(dot.origin, dot.sequence)

    def row(self, user):
        return next((r for r in self.room.roster() if r["user"] == user), None)

    def print_roster(self, title):
        self.log(title)
        print(f"      {'user':<8} {'name':<7} {'role':<8} {'online':<6} {'stage':<5} {'auth':<5} {'camera':<13} {'mic':<13} rewards")
        for r in self.room.roster():
            print(f"      {r['user']:<8} {r['name']:<7} {r['role']:<8} {str(r['online']):<6} {str(r['stage']):<5} "
                  f"{str(r['auth']):<5} {r['camera']:<13} {r['mic']:<13} {r['rewards']}")


def state_of(room):
    """A replica's whole state (values and stamps), without users that hold nothing."""
    users = {}
    for uid, u in room.users.items():
        record = (u.name, u.role, tuple(sorted(u.flags.items())), u.kicked, u.banned,
                  tuple(sorted((k, tuple(sorted(v.items()))) for k, v in u.sessions.items())),
                  tuple(sorted(u.rewards.items())),       # with every copy's stamp (stamp + copies)
                  tuple(sorted(u.properties.items())), u.chat_muted,
                  tuple(sorted(u.presence.items())),
                  tuple(sorted((o, (f[0], tuple(sorted(f[1])), f[2])) for o, f in u.session_floors.items())),
                  tuple(sorted(u.reward_floors.items())))
        empty = (u.name[1] == u.role[1] == u.kicked == (0, 0, 0) and u.banned is None and not u.sessions
                 and not u.session_floors and not u.reward_floors
                 and not u.rewards and not u.properties and not u.presence and u.chat_muted[1] == (0, 0, 0)
                 and all(stamp == (0, 0, 0) for _, stamp in u.flags.values()))
        if not empty:
            users[uid] = record
    messages = tuple(sorted((k, tuple(sorted(m.items()))) for k, m in room.messages.items()))
    locks = tuple(sorted((name, tuple(sorted(lock.items()))) for name, lock in room.locks.items()))
    breakout = (tuple(sorted(room.groups.items())), tuple(sorted(room.assignments.items())), room.breakout_ended)
    return (room.name, room.type, room.stage_limit, room.hand_limit, room.schedule, room.class_state, room.mute_all,
            tuple(sorted(room.dead.items())), tuple(sorted(room.properties.items())), tuple(sorted(users.items())),
            room.chat_muted, room.history_limit, room.floor, messages, locks, breakout, tuple(sorted(room.mutes.items())),
            room.hand_raising, room.auto_stage)


def describe_reply(E, reply):
    """A reply in one line, for check details."""
    kind = reply.WhichOneof("body")
    if kind == "write_ack":
        a = reply.write_ack
        return f"{E.WriteStatus.Name(a.status)} {a.error_code} {a.message}".strip()
    if kind == "error":
        return f"error {reply.error.code}: {reply.error.message}"
    return kind or "no body"


def is_accepted(E, reply):
    return reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == E.WRITE_STATUS_ACCEPTED


def run(args, hw, pynng, checks):
    E, C = hw.envelope_pb2, hw.common_pb2
    ACCEPTED, REJECTED = E.WRITE_STATUS_ACCEPTED, E.WRITE_STATUS_REJECTED
    room_id = args.room or f"interop-{os.getpid()}-{int(time.time())}"
    print(f"room {room_id}; node A {args.node_a}; node B {args.node_b}")

    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))

    def rejected(reply, code):
        return (reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == REJECTED
                and reply.write_ack.error_code == code)

    teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", "teacher@A")
    student = Peer(hw, pynng, room_id, "stu-1", C.ROLE_STUDENT, "Ada", "student@B")
    try:
        def digest(address):
            sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
            try:
                sock.dial(address, block=True)
                d = teacher.request(lambda e: e.digest.SetInParent(), sock=sock)
                return hw.VersionVector.from_proto(d.digest.seen)
            finally:
                sock.close()

        def snapshot(address):
            """The room as a node has it for the teacher: a sync from the empty version vector."""
            sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
            try:
                sock.dial(address, block=True)
                r = teacher.request(lambda e: setattr(e.sync_request, "user", "teach"), sock=sock)
                return hw.Room(room_id).merge_patch(r.sync_response.patch)
            finally:
                sock.close()

        def wait_both(predicate, seconds=WAIT_SECONDS):
            """Reads both clients' SUB sockets (and syncs, which renews their leases) until `predicate()`."""
            deadline = time.monotonic() + seconds
            while True:
                teacher.pump(0.02)
                student.pump(0.02)
                if predicate():
                    return True
                if time.monotonic() >= deadline:
                    return False

        def total(room, user="stu-1"):
            return next((r["rewards"] for r in room.roster() if r["user"] == user), None)

        # 0: the two nodes found each other (Flow 1: the hello lists the peers).
        print("== cluster")
        probe = Peer(hw, pynng, room_id, "probe", C.ROLE_OBSERVER, "probe", "probe")
        deadline = time.monotonic() + 5.0
        while True:
            infos = []
            for address in (args.node_a, args.node_b):
                sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
                try:
                    sock.dial(address, block=True)
                    infos.append(probe.hello(sock))
                finally:
                    sock.close()
            a, b = infos
            alive = {(i.node, p.node) for i in infos for p in i.peers if p.status == E.PEER_STATUS_ALIVE}
            formed = (a.node, b.node) in alive and (b.node, a.node) in alive
            if formed or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        checks.require("each node's hello lists the other as an ALIVE peer, with its addresses",
                       formed and any(p.address == b.address and p.publish_address == b.publish_address for p in a.peers),
                       f"A {a.node:x} at {a.address}, B {b.node:x} at {b.address}")
        # 1-3: hello, subscribe, join through two different nodes.
        print("== join: teacher through node A, student through node B")
        reply = teacher.connect(args.node_a)
        checks.require("hello on node A names its publish address", bool(teacher.node.publish_address) and teacher.node.node != 0,
                       f"node {teacher.node.node:x}, publish {teacher.node.publish_address}")
        node_a = teacher.node.node
        checks.require("teacher joins through node A and gets a snapshot",
                       reply.WhichOneof("body") == "join_response" and reply.join_response.WhichOneof("state") == "snapshot"
                       and reply.join_response.host == node_a and (teacher.row("teach") or {}).get("online") is True,
                       show(reply))
        reply = student.connect(args.node_b)
        node_b = student.node.node
        checks.require("student joins through node B and gets a snapshot",
                       reply.WhichOneof("body") == "join_response" and reply.join_response.WhichOneof("state") == "snapshot"
                       and reply.join_response.host == node_b and node_b != node_a, show(reply))
        streams = {peer.label: (peer.node.room_streams, peer.sub_address) for peer in (teacher, student)}
        checks.check("the hello on node A and on node B says room_streams; each peer's SUB socket follows its room stream, "
                     "ws://<publish host:port>/v1/rooms/<room>/users/<user>",
                     all(peer.node.room_streams and peer.sub_address == room_stream_url(peer.node.publish_address, room_id, peer.user)
                         and peer.sub_address.startswith("ws://") for peer in (teacher, student)), str(streams))
        checks.check("student's replica shows the teacher who joined through node A",
                     student.wait_for(lambda: (student.row("teach") or {}).get("online") is True))
        student.print_roster("roster as the student sees it after joining")

        # 4: live deltas across nodes.
        print("== live deltas")
        checks.require("teacher sees the student's join (made through node B) on node A's SUB socket",
                       teacher.wait_for(lambda: (teacher.row("stu-1") or {}).get("online") is True))
        row = teacher.row("stu-1")
        checks.check("a fresh student is off stage with camera and mic inoperable",
                     row["stage"] is False and row["camera"] == "inoperable" and row["mic"] == "inoperable", str(row))

        # 5: a refused write.
        print("== refusals")
        reply, _ = student.write("set_stage", target="stu-1", on=True)
        checks.check("student putting itself on stage is refused with not-allowed", rejected(reply, "not-allowed"), show(reply))

        # 6-9: acknowledged writes, each seen through the other node.
        print("== acknowledged writes")
        reply, _ = teacher.write("set_stage", target="stu-1", on=True)
        checks.require("teacher puts the student on stage: ACCEPTED with a dot from node A",
                       accepted(reply) and reply.write_ack.dot.origin == node_a, show(reply))
        dot = reply.write_ack.dot
        checks.check("student sees it on node B's SUB socket: on stage, camera device-off (state 2)",
                     student.wait_for(lambda: student.seen_dot(dot) and (student.row("stu-1") or {}).get("camera") == "device-off"),
                     str(student.row("stu-1")))
        checks.check("teacher reads its own write back (read-your-writes)", teacher.wait_for(lambda: teacher.seen_dot(dot)))

        reply, _ = student.write("set_device", target="stu-1", device=C.DEVICE_CAMERA, on=True)
        checks.check("student turns its camera on: ACCEPTED", accepted(reply), show(reply))
        checks.check("teacher sees camera privilege-off (state 3)",
                     teacher.wait_for(lambda: (teacher.row("stu-1") or {}).get("camera") == "privilege-off"), str(teacher.row("stu-1")))

        reply, _ = teacher.write("set_privilege", target="stu-1", device=C.DEVICE_CAMERA, allowed=True)
        checks.check("teacher allows the student's camera: ACCEPTED", accepted(reply), show(reply))
        checks.check("student sees camera live (state 4)",
                     student.wait_for(lambda: (student.row("stu-1") or {}).get("camera") == "live"), str(student.row("stu-1")))

        # 10: a delta lost on the student's SUB socket is detected and repaired by a sync.
        print("== loss repair")
        student.pump()
        student.drop_ops = {"set_board"}
        student.repairs.clear()
        reply, _ = teacher.write("set_board", target="stu-1", granted=True)
        checks.check("teacher grants the whiteboard: ACCEPTED", accepted(reply), show(reply))
        board_dot = reply.write_ack.dot
        if not student.wait_for(lambda: student.dropped > 0, 2.0):
            student.drop_ops.clear()
        reply, _ = teacher.write("set_hand", target="stu-1", raised=False)     # a later delta reveals the skip
        checks.check("student repairs the lost whiteboard grant by a sync",
                     student.dropped == 1 and student.wait_for(lambda: student.seen_dot(board_dot)
                                                               and (student.row("stu-1") or {}).get("auth") is True),
                     f"dropped {student.dropped}, repaired after: {', '.join(student.repairs) or 'periodic sync'}")

        # 10b: anti-entropy. Node A is cut from the cluster for a moment (its fault hook), a write made
        # through it meanwhile reaches node B only by anti-entropy, and node B passes the patch on to its
        # clients. The student lost an earlier delta on its SUB socket; the patch's `seen` covers that
        # delta, so a client that adopted it would never repair it (Flow 4).
        if args.node_a_pid:
            print("== anti-entropy patch after a partition")
            student.pump()
            student.hold_sync = True
            student.drop_ops = {"set_privilege"}
            student.repairs.clear()
            patches_before = student.topic_patches
            reply, _ = teacher.write("set_privilege", target="stu-1", device=C.DEVICE_MICROPHONE, allowed=True)
            lost_dot = reply.write_ack.dot
            student.wait_for(lambda: student.dropped == 2, 2.0)
            os.kill(args.node_a_pid, signal.SIGUSR1)                                # node A: cut from the cluster
            try:
                time.sleep(0.1)
                reply2, _ = teacher.write("set_room_name", name="Interop lesson")
                hidden_dot = reply2.write_ack.dot
                time.sleep(0.2)
                student.pump()
                not_relayed = not student.seen_dot(hidden_dot)
            finally:
                os.kill(args.node_a_pid, signal.SIGUSR2)                            # heal
            got_patch = student.wait_for(lambda: student.topic_patches > patches_before, WAIT_SECONDS)
            checks.check("a write made through node A while it is cut off reaches the student only as a topic patch",
                         accepted(reply) and accepted(reply2) and student.dropped == 2 and not_relayed and got_patch
                         and student.room.name[0] == "Interop lesson",
                         f"dropped {student.dropped}, relayed before heal: {not not_relayed}, topic patches: "
                         f"{student.topic_patches - patches_before}")
            covered = lost_dot.sequence <= hw.VersionVector.from_proto(
                student.request(lambda e: e.digest.SetInParent()).digest.seen).highest(lost_dot.origin)
            student.hold_sync = False
            checks.check("the topic patch's seen is not adopted: the delta lost before it is still repaired",
                         covered and not student.seen_dot(lost_dot) and student.wait_for(
                             lambda: student.seen_dot(lost_dot) and student.room.users["stu-1"].flags["microphone_privilege"][0] is True),
                         f"repaired after: {', '.join(student.repairs) or 'periodic sync'}")

        # 11: rewards add up; a retried reward (same counter, through the other node) counts once.
        # With node A's fault hook, A is cut from the cluster while the first reward is sent through it
        # and retried through B: B has not seen A's copy and makes a second one (two copies, one record).
        print("== rewards")
        if args.node_a_pid:
            os.kill(args.node_a_pid, signal.SIGUSR1)                                # node A: cut from the cluster
            time.sleep(0.1)
        try:
            reply, first_counter = teacher.write("reward", target="stu-1", amount=2)
            ok1 = accepted(reply)
            reply2, _ = teacher.write("reward", target="stu-1", amount=3, via=args.node_b)
            ok2 = accepted(reply2) and reply2.write_ack.dot.origin == node_b
            reply3, _ = teacher.write("reward", target="stu-1", amount=2, counter=first_counter, via=args.node_b,
                                      request_id=teacher.request_id - 1, issued_at=teacher.issued_at[first_counter])
        finally:
            if args.node_a_pid:
                os.kill(args.node_a_pid, signal.SIGUSR2)                            # heal
        ok3 = reply3.WhichOneof("body") == "write_ack" and reply3.write_ack.status in (ACCEPTED, E.WRITE_STATUS_DUPLICATE)
        checks.check("rewards of 2 (through A) and 3 (through B) are ACCEPTED, and so is a retry of the first through B",
                     ok1 and ok2 and ok3, f"{show(reply)} / {show(reply2)} / {show(reply3)}")
        checks.check("both views count 5 rewards: the retried one counts once",
                     teacher.wait_for(lambda: (teacher.row("stu-1") or {}).get("rewards") == 5)
                     and student.wait_for(lambda: (student.row("stu-1") or {}).get("rewards") == 5),
                     f"teacher sees {(teacher.row('stu-1') or {}).get('rewards')}, student sees {(student.row('stu-1') or {}).get('rewards')}")
        # The retried reward's record keeps the stamps of all its copies (RewardRecord `stamp`, the smallest,
        # and `copies`): the first copy's, and the retry's when node B sequenced it as a new copy (ACCEPTED;
        # DUPLICATE: B already held the first copy and made none). A record folded away meanwhile is fine.
        reward_key = (teacher.user, first_counter)
        copy_dots = {(d.origin, d.sequence) for d in [reply.write_ack.dot] + ([reply3.write_ack.dot] if accepted(reply3) else [])}

        def copies_of(room):
            u = room.users.get("stu-1")
            r = u.rewards.get(reward_key) if u else None
            return None if r is None else {(s[1], s[2]) for s in (r[1], *r[2])}

        def copies_ok(room):
            found = copies_of(room)
            return found == copy_dots or (found is None and bool(room.users["stu-1"].reward_floors))
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            views = [teacher.room, student.room, snapshot(args.node_a), snapshot(args.node_b)]
            if all(copies_ok(v) for v in views) or time.monotonic() >= deadline:
                break
            wait_both(lambda: False, 0.1)
        checks.check(f"... and its record holds the stamps of its {len(copy_dots)} cop{'ies' if len(copy_dots) > 1 else 'y'} "
                     "(stamp + copies) in both views and fresh snapshots of both nodes",
                     all(copies_ok(v) for v in views),
                     f"expected {sorted(copy_dots)}; " + ", ".join(
                         f"{n} {sorted(copies_of(v)) if copies_of(v) is not None else 'folded'}"
                         for n, v in zip(("teacher", "student", "snapshot A", "snapshot B"), views)))

        # 11b: the reward window. A node takes a reward only within its reward window
        # (--reward-window-ms) of its own clock; one without issued_at_ms (a client written
        # before the field) is taken as issued on arrival, and its retry counts once.
        stale = time.time_ns() // 1_000_000 - 10 * 60 * 1000
        reply2, _ = teacher.write("reward", target="stu-1", amount=1, issued_at=stale, via=args.node_b)
        checks.check("a reward issued 10 minutes ago (through B) is refused reward-window",
                     rejected(reply2, "reward-window"), f"{show(reply2)}")
        reply, v1_counter = teacher.write("reward", target="stu-1", amount=1, issued_at=0)
        retry, _ = teacher.write("reward", target="stu-1", amount=1, issued_at=0, counter=v1_counter)
        checks.check("a reward with issued_at_ms 0 (an earlier v1 client) is accepted, and its retry (same counter) is a duplicate",
                     accepted(reply) and retry.WhichOneof("body") == "write_ack" and retry.write_ack.status == E.WRITE_STATUS_DUPLICATE,
                     f"{show(reply)} / {show(retry)}")
        reply3, _ = teacher.write("set_hand", target="stu-1", raised=False)                # a marker after them
        marker = reply3.write_ack.dot
        unchanged = wait_both(lambda: teacher.seen_dot(marker) and student.seen_dot(marker)) and \
            [total(teacher.room), total(student.room), total(snapshot(args.node_a)), total(snapshot(args.node_b))] == [6] * 4
        checks.check("... and the total is 6 in both views and on both nodes: the stale one not counted, the v1 one once",
                     accepted(reply3) and unchanged, f"teacher {total(teacher.room)}, student {total(student.room)}")

        # 11c: reward folds. Each node folds the rewards it sequenced first (fold_rewards) once every copy
        # of them must have reached it (the reward window, 1 s here, has passed on every node); the total
        # (floors' sums + the records left) stays exact in every replica, live or fresh.
        print("== reward folds")
        rewards_before = 6
        dots = []
        for i in range(20):
            reply, _ = teacher.write("reward", target="stu-1", amount=1, via=args.node_b if i % 2 else None)
            if accepted(reply):
                dots.append(reply.write_ack.dot)
            else:
                teacher.log(f"reward {i + 1} of 20: {show(reply)}")
        expected_rewards = rewards_before + 20

        def folded(peer):
            u = peer.room.users.get("stu-1")
            return (u is not None and all(peer.seen_dot(d) for d in dots) and bool(u.reward_floors)
                    and len(u.rewards) < 20)
        started_fold = time.monotonic()
        ok = len(dots) == 20 and wait_both(lambda: folded(teacher) and folded(student), fold_wait(args.reward_window))
        took = time.monotonic() - started_fold
        tu, su = teacher.room.users.get("stu-1"), student.room.users.get("stu-1")
        checks.check("20 more rewards of 1 (through A and B): the nodes fold them away in both live replicas",
                     ok, f"after {took:.1f} s: teacher holds {len(tu.rewards) if tu else '-'} records, "
                     f"floors {tu.reward_floors if tu else '-'}; student {len(su.rewards) if su else '-'} records")
        checks.check(f"... and both views count {expected_rewards} rewards (floors' sums + the records left)",
                     total(teacher.room) == expected_rewards and total(student.room) == expected_rewards,
                     f"teacher {total(teacher.room)}, student {total(student.room)}")
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            fresh = [snapshot(args.node_a), snapshot(args.node_b)]
            totals = [total(r) for r in fresh]
            if totals == [expected_rewards] * 2 or time.monotonic() >= deadline:
                break
            wait_both(lambda: False, 0.1)
        checks.check(f"fresh snapshots of both nodes count {expected_rewards} too, with their reward floors",
                     totals == [expected_rewards] * 2 and all(r.users["stu-1"].reward_floors for r in fresh),
                     f"A {totals[0]} (floors {fresh[0].users['stu-1'].reward_floors}), B {totals[1]}")

        # 11d: messaging (Flow 8): a room message, a peer message across nodes, a retried send,
        # a conditional property write, a mute, presence state.
        print("== messaging")
        reply, hello_counter = teacher.write("send_message", type="chat", payload=b"Welcome!")
        checks.check("teacher sends a room message through node A: ACCEPTED", accepted(reply), show(reply))
        checks.check("student receives it through node B, in its history",
                     student.wait_for(lambda: [m["payload"] for m in student.room.history("stu-1")][-1:] == [b"Welcome!"]))
        reply, _ = teacher.write("send_message", type="chat", payload=b"Welcome!", counter=hello_counter, via=args.node_b)
        checks.check("the same message retried through node B (same counter): DUPLICATE, stored once",
                     reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == E.WRITE_STATUS_DUPLICATE
                     and teacher.wait_for(lambda: sum(1 for k in teacher.room.messages if k == ("teach", hello_counter)) == 1),
                     show(reply))
        reply, _ = student.write("send_peer_message", target="teach", type="whisper", payload=b"psst", previous=0)
        private_b = node_b ^ (1 << 63)
        checks.check("student whispers the teacher through node B: ACCEPTED, sequenced under node B's private origin",
                     accepted(reply) and reply.write_ack.dot.origin == private_b, show(reply))
        checks.check("the teacher receives it on its private stream through node A",
                     teacher.wait_for(lambda: any(m["payload"] == b"psst" for m in teacher.room.history("teach"))))
        anonymous = teacher.request(lambda e: e.sync_request.SetInParent())
        checks.check("a sync without a user gets no peer message (but its seen covers them)",
                     not any(m.recipient for m in anonymous.sync_response.patch.messages)
                     and hw.VersionVector.from_proto(anonymous.sync_response.seen).highest(private_b) >= 1)
        reply, _ = teacher.write("set_room_property", key="quiz", value=b"q1", edit=lambda b: setattr(b.condition, "revision", 0))
        ok = accepted(reply) and reply.write_ack.revision == 1
        reply2, _ = teacher.write("set_room_property", key="quiz", value=b"q2", edit=lambda b: setattr(b.condition, "revision", 0))
        checks.check("a conditional property write creates revision 1; another conditional on revision 0 gets revision-mismatch",
                     ok and rejected(reply2, "revision-mismatch"), f"{show(reply)} / {show(reply2)}")
        # Whole-set revisions: the sum of the keys' revisions, with compare-and-set on it.
        teacher.wait_for(lambda: "quiz" in teacher.room.properties)
        before = teacher.room.property_set_revision()
        reply, _ = teacher.write("set_room_property", key="board", value=b"A",
                                 edit=lambda b: setattr(b.set_condition, "revision", before))
        reply2, _ = teacher.write("set_room_property", key="quiz", value=b"q9",
                                  edit=lambda b: setattr(b.set_condition, "revision", before))
        checks.check("a write conditional on the room's set revision is ACCEPTED with set_revision one more; "
                     "another on the same set revision gets revision-mismatch",
                     before >= 1 and accepted(reply) and reply.write_ack.set_revision == before + 1
                     and rejected(reply2, "revision-mismatch"), f"set revision {before}: {show(reply)} / {show(reply2)}")
        checks.check("the client's own replica computes the same set revision as the node acknowledged",
                     teacher.wait_for(lambda: teacher.room.property_set_revision() == before + 1)
                     and student.wait_for(lambda: student.room.property_set_revision() == before + 1),
                     f"teacher {teacher.room.property_set_revision()}, student {student.room.property_set_revision()}")
        # The stage carousel (PROTOCOL.md, "Deriving the carousel"): no coordinator, so both
        # replicas, and the node, must derive the same turn from the register and the clock.
        def carousel(running, interval=10):
            def edit(b):
                b.carousel.running = running
                b.carousel.interval_seconds = interval
                b.carousel.range = C.CAROUSEL_RANGE_ALL
                b.carousel.order = C.CAROUSEL_ORDER_RANDOM
            return edit
        seven = [f"s{i}" for i in range(1, 8)]
        vectors = (hw.carousel_shuffle(seven, 42),
                   hw.carousel_shuffle(seven, 1796206413242 ^ ((3 * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))))
        checks.check("the carousel shuffle reproduces PROTOCOL.md's test vectors",
                     vectors == (["s3", "s5", "s7", "s1", "s4", "s2", "s6"], ["s7", "s1", "s4", "s2", "s3", "s5", "s6"]), f"{vectors}")
        reply, _ = student.write("set_carousel", edit=carousel(True))
        checks.check("a student's set_carousel is refused (teacher, assistant only)", not accepted(reply), show(reply))
        # Out of 10-99 s the write still decodes: the authority rules refuse it (not-allowed,
        # "invalid-value" in the message), as they do a lock TTL out of range.
        replies = [teacher.write("set_carousel", edit=carousel(True, interval))[0] for interval in (5, 100)]
        checks.check("a set_carousel turning every 5 or 100 s is a refused write (REJECTED not-allowed), not an error reply",
                     all(rejected(r, "not-allowed") and "10 to 99" in r.write_ack.message for r in replies),
                     " / ".join(show(r) for r in replies))
        reply, _ = teacher.write("set_carousel", edit=carousel(True))
        both = teacher.wait_for(lambda: teacher.room.carousel[0][0]) and student.wait_for(lambda: student.room.carousel[0][0])
        now = int(time.time() * 1000)
        turn_t, turn_s = teacher.room.carousel_turn(now), student.room.carousel_turn(now)
        checks.check("set_carousel is ACCEPTED; both replicas (through node A and node B) derive the same turn, with the student on stage",
                     accepted(reply) and both and turn_t is not None and turn_t == turn_s and "stu-1" in turn_t[1]
                     and teacher.room.stage_at(now) == student.room.stage_at(now), f"{show(reply)}: {turn_t} / {turn_s}")
        if args.homeroom_bin:
            shown = subprocess.run([args.homeroom_bin, "carousel", "--json", "--room", room_id, "--node", args.node_b],
                                   capture_output=True, text=True, timeout=20)
            node_view = json.loads(shown.stdout or "{}")
            mine = student.room.carousel_turn(int(time.time() * 1000))
            checks.check("the node's own derivation (homeroom carousel --json) names the same turn and stage as this client's",
                         node_view.get("running") is True and mine is not None
                         and node_view.get("on_stage") == mine[1] and node_view.get("next_turn_at_ms") == mine[2],
                         f"{shown.stdout.strip()} {shown.stderr.strip()} / {mine}")
        # The node's listing (RoomDigest.stage, "on stage now") shows the derived stage: with
        # the student taken off the stage as written, the carousel's turn still has it on.
        reply, _ = teacher.write("set_stage", target="stu-1", on=False)
        shown = []

        def listing_shows_the_turn():
            listing = teacher.request(lambda e: setattr(e.heartbeat, "listing", True), room=False).heartbeat
            rooms = [list(r.stage) for r in listing.rooms if r.room_id == room_id]
            shown[:] = [rooms[0] if rooms else None, teacher.room.stage_at(int(time.time() * 1000)), teacher.room.stage()]
            agreed = shown[0] == shown[1] and "stu-1" in shown[1] and "stu-1" not in shown[2]
            if not agreed:
                student.pump(0.25)                                                # a listing is up to a second old; the
            return agreed                                                         # student keeps syncing (its lease)
        checks.check("while the carousel runs, a listing hello's stage is the derived stage (the turn), not the stage as written",
                     accepted(reply) and teacher.wait_for(listing_shows_the_turn, seconds=5), f"{show(reply)}: listed, derived, written: {shown}")
        reply, _ = teacher.write("set_carousel", edit=carousel(False))
        checks.check("a stopped carousel derives no turn on either replica",
                     accepted(reply) and teacher.wait_for(lambda: teacher.room.carousel_turn(int(time.time() * 1000)) is None)
                     and student.wait_for(lambda: student.room.carousel_turn(int(time.time() * 1000)) is None), show(reply))
        reply, _ = teacher.write("set_stage", target="stu-1", on=True)
        checks.require("the student is put back on stage", accepted(reply), show(reply))
        lapses = run_locks(args, hw, checks, teacher, student, room_id, node_a, node_b)
        reply, _ = teacher.write("set_chat_muted", target="stu-1", muted=True)
        muted_ok = accepted(reply) and student.wait_for(lambda: student.room.users["stu-1"].chat_muted[0] is True)
        reply2, _ = student.write("send_message", type="chat", payload=b"let me talk")
        reply3, _ = teacher.write("set_chat_muted", target="stu-1", muted=False)
        checks.check("the teacher mutes the student: its message is refused with muted; unmuted after",
                     muted_ok and rejected(reply2, "muted") and accepted(reply3), show(reply2))
        run_room_mutes(args, hw, checks, teacher, student, room_id)
        run_hand_raising(args, hw, checks, teacher, student, room_id)
        run_invitations(hw, checks, teacher, student)

        def presence(e):
            item = e.items.add()
            item.key, item.value = "mood", b"curious"
        reply, _ = student.write("set_presence_state", target="stu-1", session=student.session, edit=presence)
        checks.check("student sets presence state through its session: the teacher sees it",
                     accepted(reply) and teacher.wait_for(lambda: teacher.room.presence_state("stu-1") == {"mood": b"curious"}),
                     show(reply))

        run_room_streams(args, hw, pynng, checks, teacher, student, room_id)

        # 12: error codes.
        print("== error replies")
        reply, _ = student.write("set_hand", target="stu-1", raised=True, role=C.ROLE_TEACHER)
        checks.check("a write with another role than the joined one: role-mismatch", rejected(reply, "role-mismatch"), show(reply))
        reply, _ = teacher.write("set_hand", raised=True, author="ghost", role=C.ROLE_STUDENT)
        checks.check("a write by a user who never joined: not-joined", rejected(reply, "not-joined"), show(reply))
        reply, _ = teacher.write("set_board", target="nobody", granted=True)
        checks.check("a write about a user who never joined: user-not-found", rejected(reply, "user-not-found"), show(reply))
        # Operator writes (PROTOCOL.md, Flow 6 "Operator writes"): no join, the role claimed.
        reply, _ = teacher.write("set_board", target="stu-1", granted=True, author="@operator", role=C.ROLE_TEACHER)
        op_dot = reply.write_ack.dot if accepted(reply) else None
        reply2, _ = teacher.write("set_stage", target="stu-1", on=False, author="@operator", role=C.ROLE_STUDENT)
        # Once both replicas hold the operator's write, neither has a record for it.
        no_record = (op_dot is not None and teacher.wait_for(lambda: teacher.seen_dot(op_dot))
                     and student.wait_for(lambda: student.seen_dot(op_dot)) and "@operator" not in teacher.room.users)
        checks.check("an operator write (author @operator, never joined) is ACCEPTED as its role; as a student it is not-allowed; "
                     "no user record appears", accepted(reply) and rejected(reply2, "not-allowed") and no_record
                     and "@operator" not in student.room.users, f"{show(reply)} / {show(reply2)}")
        listing = teacher.request(lambda e: setattr(e.heartbeat, "listing", True), room=False).heartbeat
        mine = [r for r in listing.rooms if r.room_id == room_id]
        checks.check("a listing hello (listing = true) carries health ok and the room's users, online count and stage",
                     listing.health == "ok" and len(mine) == 1 and mine[0].users >= 2 and mine[0].online >= 1
                     and list(mine[0].stage) == ["stu-1"] and all(p.heard_ms_ago < 60_000 for p in listing.peers),
                     f"health {listing.health!r}, rooms {[(r.room_id, r.users, r.online, list(r.stage)) for r in mine]}")
        reply, _ = teacher.write("set_stage_limit", limit=1)
        ok = accepted(reply)
        reply2, _ = teacher.write("set_stage", target="teach", on=True)
        reply3, _ = teacher.write("set_stage_limit", limit=6)
        checks.check("with a stage limit of 1 and the student on stage, a second user gets stage-full",
                     ok and rejected(reply2, "stage-full") and accepted(reply3), f"{show(reply2)}")
        bad = E.Envelope(protocol_version=1, room_id="no spaces allowed")
        bad.sync_request.SetInParent()
        reply = teacher.call(bad)
        checks.check("a room id outside the alphabet: error invalid-room",
                     reply.WhichOneof("body") == "error" and reply.error.code == "invalid-room", show(reply))
        v2 = E.Envelope(protocol_version=2, room_id=room_id)
        v2.digest.SetInParent()
        reply = teacher.call(v2)
        checks.check("protocol version 2: error unsupported-version",
                     reply.WhichOneof("body") == "error" and reply.error.code == "unsupported-version", show(reply))

        # 13: resume through the other node.
        print("== reconnect and resume")
        old_session = student.session
        before = len(student.room.roster())
        reply = student.connect(args.node_a, resume=True)
        ok = reply.WhichOneof("body") == "join_response" and reply.join_response.WhichOneof("state") == "patch"
        patch_size = reply.join_response.patch.ByteSize() if ok else -1
        reply_snapshot = student.request(lambda e: e.sync_request.SetInParent())
        full_size = reply_snapshot.sync_response.patch.ByteSize()
        checks.check("student resumes through node A: join_response carries a patch, smaller than the room",
                     ok and reply.join_response.host == node_a and patch_size < full_size and len(student.room.roster()) == before,
                     f"patch {patch_size} B, full state {full_size} B")
        reply, _ = student.write("leave_session", target="stu-1", session=old_session)
        checks.check("student leaves its old session through node A: ACCEPTED, still online",
                     accepted(reply) and student.wait_for(lambda: student.seen_dot(reply.write_ack.dot))
                     and (student.row("stu-1") or {}).get("online") is True, show(reply))

        # 13b: a user who joins and leaves again and again: its node folds the ended
        # sessions away (fold_sessions), in every replica, live or fresh.
        print("== session folds")
        cycler = Peer(hw, pynng, room_id, "cycle-1", C.ROLE_STUDENT, "Cycle", "cycle@A")
        try:
            for _ in range(12):
                cycler.connect(args.node_a)
                cycler.write("leave_session", target="cycle-1", session=cycler.session)
            def folded(room):
                u = room.users.get("cycle-1")
                return u is not None and len(u.sessions) < 8 and bool(u.session_floors)
            ok = teacher.wait_for(lambda: folded(teacher.room)) and student.wait_for(lambda: folded(student.room))
            u = teacher.room.users.get("cycle-1")
            checks.check("12 joins and leaves through node A: the node folds them away in both live replicas",
                         ok, f"teacher holds {len(u.sessions) if u else '-'} sessions, floors {u.session_floors if u else '-'}")
        finally:
            cycler.close_sockets()

        # 14-15: convergence and the final roster.
        print("== convergence")
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            teacher.pump(0.05)
            student.pump(0.05)
            da, db = digest(args.node_a), digest(args.node_b)
            replicas = [teacher.room, student.room, snapshot(args.node_a), snapshot(args.node_b)]
            rosters = [r.roster() for r in replicas]
            states = [state_of(r) for r in replicas]
            if (da == db and all(x == rosters[0] for x in rosters) and all(x == states[0] for x in states)) \
                    or time.monotonic() >= deadline:
                break
            teacher.sync()
            student.sync()
        checks.check("nodes A and B hold the same version vector", da == db, f"A {da} / B {db}")
        checks.check("teacher's and student's live replicas have the rosters of fresh snapshots of both nodes",
                     all(x == rosters[0] for x in rosters))
        names = ["teacher", "student", "snapshot A", "snapshot B"]
        checks.check("... and equal them register by register (values and stamps)",
                     all(x == states[0] for x in states),
                     ", ".join(f"{n} differs" for n, x in zip(names, states) if x != states[0]))
        teacher.print_roster("final roster as the teacher sees it")
        s, t = teacher.row("stu-1") or {}, teacher.row("teach") or {}
        states = ("inoperable", "device-off", "privilege-off", "live")
        expected_s = dict(user="stu-1", name="Ada", role="student", online=True, stage=True, auth=True,
                          camera="live", mic="device-off", rewards=expected_rewards)
        expected_t = dict(user="teach", name="Grace", role="teacher", online=True, stage=False, auth=False,
                          camera="inoperable", mic="inoperable", rewards=0)
        checks.check(f"final roster: student on stage, whiteboard granted, camera live, mic device-off, {expected_rewards} rewards",
                     s == expected_s and s.get("camera") in states and s.get("mic") in states, str(s))
        checks.check("final roster: teacher online, off stage, streams inoperable, no rewards", t == expected_t, str(t))

        run_lock_lapses(args, hw, checks, teacher, student, room_id, lapses)

        # 15b: session leases (Flow 5): a client that names its session in its syncs and
        # then vanishes goes offline once the node's session timeout passes.
        print("== session lease")
        ghost = Peer(hw, pynng, room_id, "ghost-1", C.ROLE_STUDENT, "Ghost", "ghost@B")
        ghost.lease = True
        try:
            reply = ghost.connect(args.node_b)
            ghost.sync()
            online = teacher.wait_for(lambda: (teacher.row("ghost-1") or {}).get("online") is True)
            vanished_at = time.monotonic()
            ghost.close_sockets()                                                 # no leave_session: it vanished
            gone = teacher.wait_for(lambda: (teacher.row("ghost-1") or {}).get("online") is False,
                                    seconds=args.session_timeout + 5)
            took = time.monotonic() - vanished_at
            checks.check(f"a client that vanishes goes offline after the session timeout ({args.session_timeout:.0f} s)",
                         reply.WhichOneof("body") == "join_response" and online and gone and took >= args.session_timeout * 0.9,
                         f"online {online}, offline {gone} after {took:.1f} s")
        finally:
            ghost.close_sockets()

        # 16: leaving.
        print("== leave")
        reply, _ = student.write("leave_session", target="stu-1", session=student.session)
        checks.check("student leaves: teacher sees it offline",
                     accepted(reply) and teacher.wait_for(lambda: (teacher.row("stu-1") or {}).get("online") is False),
                     show(reply))
        reply, _ = teacher.write("leave_session", target="teach", session=teacher.session)
        checks.check("teacher leaves: ACCEPTED", accepted(reply), show(reply))
    finally:
        teacher.close_sockets()
        student.close_sockets()


def wait_both_peers(first, second, predicate, seconds=WAIT_SECONDS):
    """Reads both peers' SUB sockets (and syncs) until `predicate()`."""
    deadline = time.monotonic() + seconds
    while True:
        first.pump(0.02)
        second.pump(0.02)
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False


def run_room_streams(args, hw, pynng, checks, teacher, student, room_id):
    """Room streams (docs/PROTOCOL.md, "Room streams"): node A's publish port also speaks SP over WebSocket, and a SUB
    socket dialed to ws://<publish host:port>/v1/rooms/<room>[/users/<user>] gets the room's client topic (and the
    user's private topic) and nothing else. Raw SUB sockets subscribed to everything on node A: the room's stream,
    the teacher's, the student's and a third user's (stu-9, who never joined), and, as the control, A's tcp://
    publish address. Meanwhile, for more than a second: a chat message in the room, a whisper from the student to
    the teacher, and a join and a chat message in another room whose id has this one's as a prefix (a teacher of its
    own, through node A). Then dials to paths that name no stream."""
    E, C = hw.envelope_pb2, hw.common_pb2
    print("== room streams")
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))
    publish = teacher.node.publish_address
    checks.require("room streams: node A's publish address has a WebSocket form (tcp://)",
                   room_stream_url(publish, room_id) is not None and publish.startswith("tcp://"), publish)
    room_topic = room_id.encode() + b"\x00"
    private_teach, private_student = teacher.private_topic(), student.private_topic()
    private_bystander = b"@" + room_topic + b"stu-9\x00"                         # a user who neither sends nor receives
    other_id = room_id + "-other"                                                 # the topics' 00 tells them apart
    other_topic = other_id.encode() + b"\x00"
    window = 1.5                                                                  # > 1 s: heartbeats every 200 ms
    socks, got = {}, {}
    other = Peer(hw, pynng, other_id, "teach-2", C.ROLE_TEACHER, "Hopper", "teacher@A (other room)")
    try:
        for name, address in (("room", room_stream_url(publish, room_id)),
                              ("teach", room_stream_url(publish, room_id, "teach")),
                              ("stu-1", room_stream_url(publish, room_id, "stu-1")),
                              ("stu-9", room_stream_url(publish, room_id, "stu-9")),
                              ("tcp", publish)):
            socks[name], got[name] = raw_sub(pynng, address), []
        started = time.monotonic()
        tag = f"{random.getrandbits(64):016x}"
        in_room, in_other, whisper = (f"room stream {what} {tag}".encode() for what in ("chat", "other room", "whisper"))
        reply_other = other.connect(args.node_a)
        if reply_other.WhichOneof("body") == "join_response":
            reply_other, _ = other.write("send_message", type="chat", payload=in_other)
        reply_room, _ = teacher.write("send_message", type="chat", payload=in_room)
        reply_whisper, _ = student.write("send_peer_message", target="teach", type="whisper", payload=whisper, previous=0)
        checks.require("room streams: the teacher's chat message, the student's whisper to the teacher and another room's "
                       "join and chat message (through node A) are ACCEPTED",
                       accepted(reply_room) and accepted(reply_whisper) and accepted(reply_other),
                       f"{show(reply_room)} / {show(reply_whisper)} / {other_id}: {show(reply_other)}")

        def holding(name, payload):
            return [m for m in got[name] if payload in m]

        def arrived():
            return (holding("room", in_room) and holding("teach", whisper) and holding("stu-1", whisper)
                    and holding("stu-9", in_room) and holding("tcp", in_other) and holding("tcp", whisper))
        wait_both_peers(teacher, student, lambda: drain_into(pynng, socks, got) or other.pump() or
                        (time.monotonic() - started >= window and bool(arrived())), seconds=window + WAIT_SECONDS)
        other.write("leave_session", target=other.user, session=other.session)
        drain_into(pynng, socks, got)
        took = time.monotonic() - started
        topics = {name: by_topic(hw, messages) for name, messages in got.items()}

        def counts(name, keep=lambda topic: True):
            picked = [(n, size) for topic, (n, size) in topics[name].items() if keep(topic)]
            return f"{sum(n for n, _ in picked)} messages, {sum(size for _, size in picked)} bytes"

        def foreign(name, allowed):
            return {topic: n for topic, (n, _) in topics[name].items() if topic not in allowed}

        control = topics["tcp"]
        checks.check(f"room streams: the control, a SUB socket subscribed to b'' on node A's tcp:// publish address, gets in "
                     f"the same {took:.1f} s heartbeats (02), node topics (01), {other_id}'s chat message and the whisper",
                     control.get(b"02", (0, 0))[0] >= 2 and control.get(b"01", (0, 0))[0] >= 1
                     and bool(holding("tcp", in_other)) and bool(holding("tcp", whisper)),
                     f"{counts('tcp')}: 02 {control.get(b'02', (0, 0))}, 01 {control.get(b'01', (0, 0))}, "
                     f"{other_id} {control.get(other_topic, (0, 0))}, the room {control.get(room_topic, (0, 0))}")
        leaked = foreign("room", {room_topic})
        checks.check(f"room streams: a SUB socket subscribed to b'' on ws://.../v1/rooms/<room> gets the room's chat message "
                     f"sent meanwhile, and in {took:.1f} s nothing whose topic is not the room's: nothing of {other_id}, no "
                     "private topic, no node topic (01), no heartbeat (02)",
                     bool(holding("room", in_room)) and not leaked and not holding("room", in_other),
                     f"the room's topic: {counts('room', lambda t: t == room_topic)}; other topics: "
                     f"{counts('room', lambda t: t != room_topic)} {leaked}")
        leaked_private = {name: foreign(name, {room_topic, private})
                          for name, private in (("teach", private_teach), ("stu-1", private_student), ("stu-9", private_bystander))}

        def on(name, topic):
            return any(m.startswith(topic) for m in holding(name, whisper))
        checks.check("room streams: the student's whisper to the teacher is on the teacher's stream (/users/teach, on "
                     "@<room> 00 teach 00) and on the sender's (/users/stu-1, its own private topic), not on a third user's "
                     "stream in the room (/users/stu-9) nor on the room's stream (/v1/rooms/<room>), though the third user's "
                     "carried the room's chat message; no stream carries another user's private topic or another topic",
                     on("teach", private_teach) and on("stu-1", private_student) and not holding("stu-9", whisper)
                     and not holding("room", whisper) and bool(holding("stu-9", in_room))
                     and not any(leaked_private.values()),
                     "; ".join(f"{name}: {counts(name)}, whisper {len(holding(name, whisper))}, chat {len(holding(name, in_room))}"
                               for name in ("teach", "stu-1", "stu-9", "room")) + f"; other topics {leaked_private}")

        host = publish[len("tcp://"):]
        refused = {}
        for path in ("/nope", "/v1/rooms/no%20spaces", f"/v1/rooms/{room_id}/groups/g1", "/v1/rooms/"):
            sock = pynng.Sub0(recv_max_size=0, recv_timeout=10)
            try:
                sock.dial(f"ws://{host}{path}", block=True)
                refused[path] = "dialed"
            except pynng.NNGException as e:
                refused[path] = type(e).__name__
            finally:
                sock.close()
        checks.check("room streams: WebSocket dials to a path that names no stream (/nope), an invalid room id, a path with "
                     "other segments and no room are refused (pynng's dial with block=True raises)",
                     "dialed" not in refused.values(), str(refused))
    finally:
        for sock in socks.values():
            sock.close()
        other.close_sockets()


def run_room_mutes(args, hw, checks, teacher, student, room_id):
    """The room's camera mute ("Room mutes"): the teacher (through A) mutes every student's camera;
    the student's live camera shows device-off on both replicas and in `homeroom roster --json`
    (through B), its camera-on is refused device-muted; the unmute names the mute it ends, turns
    nothing on, and the student's next camera-on is live."""
    E, C = hw.envelope_pb2, hw.common_pb2
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))
    both = (teacher, student)

    def camera(peer):
        return next((row["camera"] for row in peer.room.roster() if row["user"] == "stu-1"), None)

    def node_roster():
        if not args.homeroom_bin:
            return None
        shown = subprocess.run([args.homeroom_bin, "roster", "--json", "--room", room_id, "--node", args.node_b],
                               capture_output=True, text=True, timeout=20)
        return json.loads(shown.stdout or "{}")

    reply, _ = student.write("set_device", target="stu-1", device=C.DEVICE_CAMERA, on=True)
    reply2, _ = teacher.write("set_privilege", target="stu-1", device=C.DEVICE_CAMERA, allowed=True)
    live = accepted(reply) and accepted(reply2) and all(p.wait_for(lambda p=p: camera(p) == "live") for p in both)
    checks.check("room mutes: the student's camera is on, on stage and allowed: live on both replicas", live,
                 f"{show(reply)} / {show(reply2)}: {camera(teacher)} {camera(student)}")
    reply, _ = teacher.write("set_device_muted", device=C.DEVICE_CAMERA, muted=True)
    muted = accepted(reply) and all(p.wait_for(lambda p=p: p.room.muted("camera") and camera(p) == "device-off") for p in both)
    flag = student.room.users["stu-1"].flags["camera_device"][0]
    reply2, _ = student.write("set_device", target="stu-1", device=C.DEVICE_CAMERA, on=True)
    refused = reply2.WhichOneof("body") == "write_ack" and reply2.write_ack.error_code == "device-muted"
    checks.check("set_device_muted (camera) is ACCEPTED: both replicas show the student's camera device-off (its flag still "
                 "on), the microphone not muted; the student's camera-on is REJECTED device-muted",
                 muted and flag and not teacher.room.muted("microphone") and refused, f"{show(reply)} / {show(reply2)}")
    reply, _ = student.write("set_device_muted", device=C.DEVICE_CAMERA, muted=False)
    checks.check("a student's set_device_muted is refused not-allowed", reply.write_ack.error_code == "not-allowed", show(reply))
    view = node_roster()
    if view is not None:
        row = next((r for r in view.get("students", []) if r.get("user") == "stu-1"), {})
        checks.check("homeroom roster --json (through B) shows the room's mute and the student's camera device-off, as derived here",
                     view.get("room", {}).get("muted_devices") == ["camera"] and row.get("camera") == camera(student) == "device-off",
                     json.dumps(view.get("room")) + " " + json.dumps(row))
    reply, _ = teacher.write("set_device_muted", device=C.DEVICE_CAMERA, muted=False)
    unmuted = accepted(reply) and all(p.wait_for(lambda p=p: not p.room.muted("camera")) for p in both)
    closed, opening = teacher.room.mutes["camera"]
    checks.check("the unmute is ACCEPTED and names the mute it ends (the node filled in ending_*); the camera stays "
                 "device-off on both replicas: an unmute turns nothing on",
                 unmuted and opening is not None and opening[0] == closed and all(camera(p) == "device-off" for p in both),
                 f"{show(reply)}: {teacher.room.mutes['camera']} {camera(teacher)} {camera(student)}")
    reply, _ = student.write("set_device", target="stu-1", device=C.DEVICE_CAMERA, on=True)
    checks.check("the student turns its camera on again: live on both replicas",
                 accepted(reply) and all(p.wait_for(lambda p=p: camera(p) == "live") for p in both), show(reply))


def run_invitations(hw, checks, teacher, student):
    """Invitations to the stage ("Invitations to the stage"): the teacher takes the student off the
    stage and invites it; the student's answer, sent with the invitation fields 0, comes back naming
    the invitation (its node filled them in), is ACCEPTED and puts it on stage on both replicas, the
    record accepted, and its node follows it with a system set_stage (after the answer's stamp) that a
    client which skips op 46 applies; a second answer is REJECTED invitation-answered."""
    E = hw.envelope_pb2
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))
    both = (teacher, student)
    reply, _ = teacher.write("set_stage", target="stu-1", on=False)
    off = accepted(reply) and all(p.wait_for(lambda p=p: "stu-1" not in p.room.stage()) for p in both)
    reply2, _ = teacher.write("invite_to_stage", target="stu-1", seconds=60)
    invited = accepted(reply2) and all(
        p.wait_for(lambda p=p: "stu-1" in p.room.invitations and p.room.invitations["stu-1"][3] is None) for p in both)
    reply3, _ = student.write("answer_invitation", accept=True)

    def answered(p):
        record = p.room.invitations.get("stu-1")
        return "stu-1" in p.room.stage() and record is not None and record[3] is not None and record[3][1] is True
    seated = accepted(reply3) and all(p.wait_for(lambda p=p: answered(p)) for p in both)
    record = teacher.room.invitations.get("stu-1")
    # The accept sets the stage register at its own stamp; its node follows it with a plain
    # system set_stage (for clients that skip op 46), so the register ends at that later stamp.
    named = record is not None and record[2] == "teach" and record[1] == 60 and record[3] is not None \
        and teacher.wait_for(lambda: teacher.room.users["stu-1"].flags["stage"][0] is True
                             and teacher.room.users["stu-1"].flags["stage"][1] > record[3][0])
    reply4, _ = student.write("answer_invitation", accept=False)
    again = reply4.WhichOneof("body") == "write_ack" and reply4.write_ack.error_code == "invitation-answered"
    checks.check("invite_to_stage is ACCEPTED; the student's answer_invitation accept is ACCEPTED and puts it on stage on both "
                 "replicas (the record accepted; the stage register then written again by the node's plain set_stage after the answer's stamp); a second answer is "
                 "REJECTED invitation-answered", off and invited and seated and named and again,
                 f"{show(reply)} / {show(reply2)} / {show(reply3)} / {show(reply4)}: {record}")


def run_hand_raising(args, hw, checks, teacher, student, room_id):
    """Hand raising ("Hand raising"): switched off, the student's raised hand is lowered on both
    replicas and its raise is refused hand-raising-off; on with auto-stage, the student's raise (off
    stage, seats free) puts it on stage, not on the hand list, as `homeroom roster --json` shows
    too; then back to on without auto-stage, the student on stage as before."""
    E, C = hw.envelope_pb2, hw.common_pb2
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))
    both = (teacher, student)
    reply, _ = student.write("set_hand", target="stu-1", raised=True)
    raised = accepted(reply) and all(p.wait_for(lambda p=p: p.room.hands() == ["stu-1"]) for p in both)
    reply2, _ = teacher.write("set_hand_raising", allowed=False)
    off = accepted(reply2) and all(p.wait_for(lambda p=p: p.room.hand_raising_policy() == (False, False) and p.room.hands() == [])
                                   for p in both)
    reply3, _ = student.write("set_hand", target="stu-1", raised=True)
    refused = reply3.WhichOneof("body") == "write_ack" and reply3.write_ack.error_code == "hand-raising-off"
    checks.check("set_hand_raising off is ACCEPTED: the student's raised hand is lowered on both replicas (its flag still up), "
                 "and its raise is REJECTED hand-raising-off",
                 raised and off and student.room.users["stu-1"].flags["hand"][0] and refused,
                 f"{show(reply)} / {show(reply2)} / {show(reply3)}")
    reply, _ = teacher.write("set_stage", target="stu-1", on=False)
    reply2, _ = teacher.write("set_hand_raising", allowed=True, auto_stage=True)
    ready = accepted(reply) and accepted(reply2) and all(
        p.wait_for(lambda p=p: p.room.hand_raising_policy() == (True, True) and "stu-1" not in p.room.stage()) for p in both)
    checks.check("set_hand_raising on with auto_stage is ACCEPTED; the switch-on names the switch-off it ends; the lowered hand "
                 "stays down", ready and teacher.room.hand_raising[1] is not None
                 and teacher.room.hand_raising[1][0] == teacher.room.hand_raising[0] and teacher.room.hands() == [],
                 f"{show(reply)} / {show(reply2)}: {teacher.room.hand_raising}")
    reply, _ = student.write("set_hand", target="stu-1", raised=True)
    seated = accepted(reply) and all(p.wait_for(lambda p=p: "stu-1" in p.room.stage() and p.room.hands() == []) for p in both)
    dot = (reply.write_ack.dot.origin, reply.write_ack.dot.sequence)
    wrote = [f for f, (_, stamp) in student.room.users["stu-1"].flags.items() if (stamp[1], stamp[2]) == dot]
    checks.check("with auto-stage and free seats, the student's raise is ACCEPTED as its promotion: on stage on both replicas, "
                 "not on the hand list; the delta the write became wrote the stage register, not the hand",
                 seated and wrote == ["stage"], f"{show(reply)}: the acknowledged delta wrote {wrote}")
    if args.homeroom_bin:
        shown = subprocess.run([args.homeroom_bin, "roster", "--json", "--room", room_id, "--node", args.node_b],
                               capture_output=True, text=True, timeout=20)
        view = json.loads(shown.stdout or "{}")
        checks.check("homeroom roster --json (through B) says hand raising is on with auto-stage, the student on stage and no hands",
                     view.get("room", {}).get("hand_raising") == "on, auto-stage" and "stu-1" in view.get("stage", [])
                     and view.get("hands") == [], f"{shown.stdout.strip()[:300]} {shown.stderr.strip()}")
    reply, _ = teacher.write("set_hand_raising", allowed=True, auto_stage=False)
    checks.require("hand raising back to on without auto-stage",
                   accepted(reply) and all(p.wait_for(lambda p=p: p.room.hand_raising_policy() == (True, False)) for p in both), show(reply))


def run_locks(args, hw, checks, teacher, student, room_id, node_a, node_b):
    """Locks with fencing (PROTOCOL.md, "Deriving locks"; MESSAGING.md, "Locks"): the teacher
    (through node A) and the student (through node B) take turns on one lock, guard property
    writes with its fence, and compare their derivation with the node's (homeroom lock --json)."""
    E, S = hw.envelope_pb2, hw.state_pb2
    print("== locks")
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))

    def rejected(reply, code):
        return (reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == E.WRITE_STATUS_REJECTED
                and reply.write_ack.error_code == code)

    def fenced(lock, fence):
        def edit(b):
            b.fence.lock, b.fence.fence = lock, fence
        return edit

    def now():
        return int(time.time() * 1000)

    def holder(peer, lock):
        grant = peer.room.lock_holder(lock, now())
        return grant and grant[:2]

    lock = "grading"
    # The fence formula: the first grant of a lock at a node is (1 << 24) | the node's name hash.
    name = teacher.node.node_name
    parts = hw.structured_parts(node_a)
    checks.check("the fence formula: a first grant by a node named n1 is 22532835; node A's name hash is its id's",
                 hw.lock_fence(0, hw.STRUCTURED | (hw.name_hash("n1") << hw.GENERATION_BITS) | 1) == 22532835
                 and (1 << 24) | hw.name_hash("n1") == 22532835 and hw.lock_fence(0, 0x0123_4567_89AB) == 0x0167_89AB
                 and hw.lock_fence(22532835, 22532835) == (2 << 24) | 0x57D2E3
                 and parts is not None and (not name or hw.name_hash(name) == parts[0]),
                 f"nameHash24('n1') = {hw.name_hash('n1')}; node A {name!r}: {parts}")
    expected = hw.lock_fence(0, node_a)
    reply, _ = teacher.write("acquire_lock", name=lock, ttl_seconds=30)
    first = reply.write_ack.fence if accepted(reply) else 0
    checks.check("the teacher acquires a lock through node A: ACCEPTED with the fence the formula gives for node A's name",
                 accepted(reply) and first == expected == (1 << 24) | parts[0], f"{show(reply)}: fence {first}, expected {expected}")
    both = (teacher.wait_for(lambda: holder(teacher, lock) == ("teach", first))
            and student.wait_for(lambda: holder(student, lock) == ("teach", first)))
    checks.check("both replicas (through node A and node B) derive the teacher as the holder, with that fence",
                 both, f"teacher {holder(teacher, lock)}, student {holder(student, lock)}")
    reply, _ = student.write("acquire_lock", name=lock, ttl_seconds=30)
    reply2, _ = student.write("release_lock", name=lock)
    reply3, _ = student.write("release_lock", name=lock, revoke=True)
    as_delta = dict(role="student", op="release_lock", author="stu-1", user=None,
                    body=hw.delta_pb2.ReleaseLock(name=lock, revoke=True))
    checks.check("the student (through node B) is refused: acquire lock-held, release lock-not-held, revoke not-allowed "
                 "(requires-moderator, as refusal() computes for such a delta)",
                 rejected(reply, "lock-held") and rejected(reply2, "lock-not-held") and rejected(reply3, "not-allowed")
                 and hw.refusal(as_delta) == "requires-moderator", f"{show(reply)} / {show(reply2)} / {show(reply3)}")
    reply, _ = teacher.write("acquire_lock", name=lock, ttl_seconds=60)
    checks.check("the holder acquiring again renews: ACCEPTED, the same fence, the new TTL on both replicas",
                 accepted(reply) and reply.write_ack.fence == first
                 and teacher.wait_for(lambda: teacher.room.locks[lock]["grant"] == ("teach", first, 60))
                 and student.wait_for(lambda: student.room.locks[lock]["grant"] == ("teach", first, 60)),
                 f"{show(reply)}: fence {reply.write_ack.fence}")

    reply, _ = teacher.write("set_room_property", key="grades", value=b"A", edit=fenced(lock, first))
    checks.check("a property write guarded by the holder's fence is ACCEPTED; both replicas hold it with that fence",
                 accepted(reply) and teacher.wait_for(lambda: (teacher.room.properties.get("grades") or [None] * 8)[7] == (lock, first))
                 and student.wait_for(lambda: (student.room.properties.get("grades") or [None] * 8)[7] == (lock, first)),
                 show(reply))
    reply, _ = teacher.write("set_room_property", key="grades", value=b"B")
    checks.check("an unguarded write of that key is refused fence-required", rejected(reply, "fence-required"), show(reply))
    reply, _ = teacher.write("set_room_property", key="grades", value=b"B", edit=fenced(lock, first + 1))
    checks.check("a guarded write presenting another fence than the grant's is refused fence-stale",
                 rejected(reply, "fence-stale"), show(reply))

    reply, _ = teacher.write("release_lock", name=lock)
    released = accepted(reply) and student.wait_for(lambda: holder(student, lock) is None) \
        and teacher.wait_for(lambda: holder(teacher, lock) is None)
    reply2, _ = teacher.write("set_room_property", key="grades", value=b"C", edit=fenced(lock, first))
    checks.check("after the release, both replicas derive the lock free, and a write with the old fence is refused lock-not-held",
                 released and rejected(reply2, "lock-not-held") and student.room.locks[lock]["ended_fence"] == first,
                 f"{show(reply)} / {show(reply2)}")
    reply, _ = student.write("acquire_lock", name=lock, ttl_seconds=30)
    second = reply.write_ack.fence if accepted(reply) else 0
    checks.check("the student acquires it through node B: a larger fence, the formula's for node B after the first",
                 accepted(reply) and second > first and second == hw.lock_fence(first, node_b),
                 f"{show(reply)}: fence {second}, expected {hw.lock_fence(first, node_b)}")
    reply, _ = student.write("set_user_property", target="stu-1", key="answer", value=b"42", edit=fenced(lock, second))
    ok = accepted(reply) and teacher.wait_for(lambda: holder(teacher, lock) == ("stu-1", second)
                                              and "answer" in teacher.room.users["stu-1"].properties)
    reply2, _ = teacher.write("set_user_property", target="stu-1", key="answer", value=b"41", edit=fenced(lock, first))
    checks.check("the student's write under the new grant is ACCEPTED; the teacher's with the old fence is refused fence-stale",
                 ok and rejected(reply2, "fence-stale"), f"{show(reply)} / {show(reply2)}")

    # A lock whose holder went offline: held until TTL after the grant, then it lapses (no event).
    locker = Peer(hw, teacher.pynng, room_id, "locker", hw.common_pb2.ROLE_STUDENT, "Locker", "locker@B")
    try:
        locker.connect(args.node_b)
        reply, _ = locker.write("acquire_lock", name="seating", ttl_seconds=10)
        locker.write("leave_session", target="locker", session=locker.session)
        gone = accepted(reply) and student.wait_for(
            lambda: "locker" in student.room.users and not student.room.online(student.room.users["locker"]))
    finally:
        locker.close_sockets()
    status = student.room.lock_status("seating", now()) if "seating" in student.room.locks else {}
    grant_ms = student.room.locks["seating"]["grant_stamp"][0] >> 16 if status else 0
    checks.check("a holder that left still holds its lock, which lapses TTL after the grant",
                 gone and status.get("holder") == "locker" and status.get("lapses_at_ms") == grant_ms + 10_000
                 and student.room.lock_holder("seating", grant_ms + 9_999) is not None
                 and student.room.lock_holder("seating", grant_ms + 10_000) is None, f"{show(reply)}: {status}")

    if args.homeroom_bin:
        for peer, address in ((student, args.node_b), (teacher, args.node_a)):
            shown = subprocess.run([args.homeroom_bin, "lock", "--json", "--room", room_id, "--node", address],
                                   capture_output=True, text=True, timeout=20)
            try:
                node_view = json.loads(shown.stdout or "{}").get("locks")
            except ValueError:
                node_view = None
            peer.pump()
            mine = [dict(name=l["name"], holder=l["holder"], fence=l["fence"], ttl_seconds=l["ttl_seconds"],
                         lapses_at_ms=l["lapses_at_ms"]) for l in peer.room.lock_statuses(now())]
            checks.check(f"the node's own view (homeroom lock --json, through {peer.label[-1]}) lists the same locks, holders, "
                         f"fences and lapse times as this client's replica",
                         node_view == mine and [l["holder"] for l in mine] == ["stu-1", "locker"],
                         f"{shown.stdout.strip()} {shown.stderr.strip()[-200:]} / {mine}")

    reply, _ = teacher.write("release_lock", name=lock, revoke=True)
    checks.check("the teacher revokes the student's grant: ACCEPTED, free on both replicas",
                 accepted(reply) and teacher.wait_for(lambda: holder(teacher, lock) is None)
                 and student.wait_for(lambda: holder(student, lock) is None
                                      and student.room.locks[lock]["ended_fence"] == second), show(reply))

    # One lock guards a key: "grades" carries grading's fence, so a write guarded by another lock is
    # refused fence-required, even with the same fence number (rubric's first grant at node A).
    reply, _ = teacher.write("acquire_lock", name="rubric", ttl_seconds=30)
    rubric = reply.write_ack.fence if accepted(reply) else 0
    reply2, _ = teacher.write("set_room_property", key="grades", value=b"D", edit=fenced("rubric", rubric))
    checks.check("one lock guards a key: a write of grades (written under grading) guarded by rubric, another lock the "
                 "teacher holds with the same fence number, is refused fence-required naming grading",
                 accepted(reply) and rubric == first and rejected(reply2, "fence-required") and "grading" in reply2.write_ack.message,
                 f"{show(reply)}: fence {rubric} / {show(reply2)}")

    def settle(predicate):
        """Waits for predicate() reading (and syncing) both peers, so that neither one's session lease runs out."""
        return wait_both_peers(teacher, student, predicate)

    # A release names the grant it ends: a retry after a new grant never ends that one.
    reply, _ = teacher.write("release_lock", name="rubric", fence=rubric + (1 << 24))
    reply2, release_counter = teacher.write("release_lock", name="rubric", fence=rubric)
    release_id = teacher.request_id
    released = accepted(reply2) and settle(lambda: holder(teacher, "rubric") is None)
    reply3, _ = teacher.write("acquire_lock", name="rubric", ttl_seconds=30)
    again = reply3.write_ack.fence if accepted(reply3) else 0
    reply4, _ = teacher.write("release_lock", name="rubric", fence=rubric, counter=release_counter, request_id=release_id)
    kept = settle(lambda: holder(teacher, "rubric") == ("teach", again) and holder(student, "rubric") == ("teach", again))
    checks.check("a release names its grant: another fence is refused fence-stale, its own fence ends it; the same release "
                 "retried (same counter) after a new grant is refused fence-stale, and the new grant stands on both replicas",
                 rejected(reply, "fence-stale") and released and accepted(reply3) and again == hw.lock_fence(rubric, node_a)
                 and rejected(reply4, "fence-stale") and kept,
                 f"{show(reply)} / {show(reply2)} / new fence {again} / {show(reply4)}")
    reply, _ = teacher.write("release_lock", name="rubric", revoke=True, fence=rubric)
    reply2, _ = teacher.write("release_lock", name="rubric", revoke=True)
    checks.check("so does a revoke: naming the ended grant, fence-stale; with fence 0 the node fills in the current grant's, "
                 "which ends on both replicas",
                 rejected(reply, "fence-stale") and accepted(reply2)
                 and settle(lambda: teacher.room.locks["rubric"]["ended_fence"] == student.room.locks["rubric"]["ended_fence"] == again
                          and holder(teacher, "rubric") is None),
                 f"{show(reply)} / {show(reply2)}")

    # Fences are at most 2^62, wherever they appear.
    big = hw.MAX_FENCE + 1
    reply, _ = teacher.write("acquire_lock", name="rubric", ttl_seconds=30, fence=big)
    as_delta = dict(role="teacher", op="acquire_lock", author="teach", user=None,
                    body=hw.delta_pb2.AcquireLock(name="rubric", ttl_seconds=30, fence=big))
    reply2, _ = teacher.write("set_room_property", key="grades", value=b"E", edit=fenced(lock, big))

    def refused_patch(build):
        out = S.RoomPatch(room_id="bounds", replicas=[7], strings=["w"])
        build(out)
        try:
            hw.Room("bounds").merge_patch(out)
            return False
        except ValueError:
            return True

    def grant(fence, ttl=30):
        def build(out):
            record = out.locks.add(name="l", granted=True, holder=0, fence=fence, ttl_seconds=ttl)
            record.grant_stamp.clock, record.grant_stamp.sequence = 1 << 16, 1
        return build

    def many(kind, n):
        def build(out):
            for i in range(n):
                entry = out.locks.add(name=f"l{i}") if kind == "locks" else out.breakout_groups.add(id=f"g{i}", name="G")
                if kind != "locks":
                    entry.stamp.clock, entry.stamp.sequence = 1 << 16, i + 1
        return build

    def property_fence(out):
        p = out.properties.add(key="k", value=b"v", writer=0, revision=1)
        p.stamp.clock, p.stamp.sequence = 1 << 16, 1
        p.fence.lock, p.fence.fence = "l", big
    refusals = [refused_patch(grant(big)), refused_patch(grant(hw.MAX_FENCE)), refused_patch(grant(5, ttl=5)),
                refused_patch(property_fence), refused_patch(many("locks", 4097)), refused_patch(many("locks", 4096)),
                refused_patch(many("groups", 4097)), refused_patch(many("groups", 4096))]
    checks.check("fences are at most 2^62: an acquire naming a larger one is refused not-allowed (invalid-value, as refusal() "
                 "computes), a property write guarded by one gets error invalid-value, and merge_patch refuses a patch with "
                 "such a fence, a grant TTL outside 10-300 s, or more than 4,096 locks or groups (2^62 and 4,096 are taken)",
                 rejected(reply, "not-allowed") and hw.refusal(as_delta) == "invalid-value"
                 and reply2.WhichOneof("body") == "error" and reply2.error.code == "invalid-value"
                 and refusals == [True, False, True, True, True, False, True, False],
                 f"{show(reply)} / {show(reply2)}; patches refused: {refusals}")

    def carousel_every(seconds, running=True):
        def build(out):
            out.carousel.value.running, out.carousel.value.interval_seconds = running, seconds
            out.carousel.stamp.clock, out.carousel.stamp.sequence = 1 << 16, 1
        return build
    turning = [refused_patch(carousel_every(n)) for n in (5, 100, 10, 99)] + [refused_patch(carousel_every(5, running=False))]
    checks.check("merge_patch refuses a patch whose running carousel turns outside 10-99 s (10, 99 and a stopped one are taken)",
                 turning == [True, True, False, False, False], f"patches refused: {turning}")

    # A lapse sticks; a holder back within its TTL keeps the lock. The teacher takes "podium" for 10 s
    # and reconnects at once (a new session, begun before the lapse), ending its old one: it holds the
    # lock past the TTL. The offline "seating" holder comes back only after its lapse (run_lock_lapses).
    reply, _ = teacher.write("acquire_lock", name="podium", ttl_seconds=10)
    podium = reply.write_ack.fence if accepted(reply) else 0
    old_session = teacher.session
    settle(lambda: holder(teacher, "podium") == ("teach", podium))
    rejoined = teacher.connect(args.node_a, resume=True).WhichOneof("body") == "join_response"
    reply2, _ = teacher.write("leave_session", target="teach", session=old_session)
    left = settle(lambda: all(p.room.users["teach"].sessions.get(old_session, {}).get("ended") is not None
                            and teacher.session in p.room.users["teach"].sessions for p in (teacher, student)))
    lapse = teacher.room.lock_lapse("podium") if "podium" in teacher.room.locks else 0
    seat_lapse = student.room.lock_lapse("seating")
    after = max(lapse, seat_lapse) + 60_000
    checks.check("a holder back within the TTL keeps the lock: the teacher, back within podium's 10 s through a new session "
                 "(its old one ended), holds it after the TTL on both replicas (no lapse time); seating's offline holder "
                 "does not, from its lapse",
                 accepted(reply) and rejoined and accepted(reply2) and left
                 and teacher.room.lock_holder("podium", after) == ("teach", podium, 10)
                 and student.room.lock_holder("podium", after) == ("teach", podium, 10)
                 and student.room.lock_status("podium", now())["lapses_at_ms"] is None
                 and student.room.lock_holder("seating", seat_lapse) is None,
                 f"{show(reply)} / {show(reply2)}; podium lapse {lapse}: {student.room.lock_status('podium', after)}")
    lapses = dict(podium=(podium, lapse), seating=seat_lapse)

    # The merge order (Room state): fence first (absent: 0), then revision, then stamp. A write under a
    # later grant wins over a higher revision written under an earlier one, in either order.
    def patch(revision, clock, fence=None):
        out = S.RoomPatch(room_id="merge", replicas=[7], strings=["w"])
        p = out.properties.add(key="k", value=f"r{revision}".encode(), writer=0, revision=revision)
        p.stamp.clock, p.stamp.replica, p.stamp.sequence = clock << 16, 0, clock
        if fence is not None:
            p.fence.lock, p.fence.fence = lock, fence
        return out
    older, newer = patch(5, 200, first), patch(1, 100, second)
    results = []
    for order in ((older, newer), (newer, older)):
        room = hw.Room("merge")
        for one in order:
            room.merge_patch(one)
        results.append((room.properties["k"][0], room.properties["k"][5]))
    tie = hw.Room("merge").merge_patch(patch(1, 300, first)).merge_patch(patch(2, 100, first)).properties["k"][0]
    unguarded = hw.Room("merge").merge_patch(patch(9, 300)).merge_patch(patch(1, 100, first)).properties["k"][0]
    checks.check("merge order: the larger fence wins over a higher revision (the key's revision goes down), in either order; "
                 "equal fences fall back to the revision; any fence beats none",
                 results == [(b"r1", 1)] * 2 and tie == b"r2" and unguarded == b"r1", f"{results}, tie {tie}, unguarded {unguarded}")

    # A split (node A cut from the cluster by its fault hook): each side grants the same lock, and each
    # holder writes the same key under its fence, the teacher twice. After the heal one grant stands, the
    # larger fence, and so does the write made under it, on both replicas, whatever the revisions.
    if args.node_a_pid:
        split, key = "essay", "draft"
        os.kill(args.node_a_pid, signal.SIGUSR1)                                # node A: cut from the cluster
        try:
            time.sleep(0.1)
            reply_a, _ = teacher.write("acquire_lock", name=split, ttl_seconds=30)
            reply_b, _ = student.write("acquire_lock", name=split, ttl_seconds=30)
            fence_a = reply_a.write_ack.fence if accepted(reply_a) else 0
            fence_b = reply_b.write_ack.fence if accepted(reply_b) else 0
            writes = [teacher.write("set_user_property", target="stu-1", key=key, value=v, edit=fenced(split, fence_a))[0]
                      for v in (b"teacher 1", b"teacher 2")]
            writes.append(student.write("set_user_property", target="stu-1", key=key, value=b"student", edit=fenced(split, fence_b))[0])
        finally:
            os.kill(args.node_a_pid, signal.SIGUSR2)                            # heal
        winner, value, revision = (("stu-1", b"student", 1) if fence_b > fence_a else ("teach", b"teacher 2", 2))
        fence = max(fence_a, fence_b)

        def settled(peer):
            prop = peer.room.users["stu-1"].properties.get(key)
            return holder(peer, split) == (winner, fence) and prop is not None and prop[0] == value and prop[7] == (split, fence)
        healed = wait_both_peers(teacher, student, lambda: settled(teacher) and settled(student))
        prop = student.room.users["stu-1"].properties.get(key)
        checks.check("a split: both sides grant the lock (each its own fence), and after the heal both replicas hold the grant "
                     "with the larger fence and the value written under it"
                     + (" (at revision 1, below the other side's 2)" if revision == 1 else ""),
                     accepted(reply_a) and accepted(reply_b) and fence_a != fence_b and all(accepted(w) for w in writes) and healed
                     and prop is not None and prop[5] == revision,
                     f"fence A {fence_a}, fence B {fence_b}: teacher {holder(teacher, split)}, student {holder(student, split)}, "
                     f"{key} = {prop[0] if prop else None} at revision {prop[5] if prop else None}")
    return lapses


def run_lock_lapses(args, hw, checks, teacher, student, room_id, lapses):
    """After the TTLs of run_locks' "podium" and "seating" (PROTOCOL.md, "Deriving locks": held = within the
    TTL, or through a session begun by the lapse): the teacher, back within podium's TTL, still holds it;
    seating's holder, back only after its lapse, does not, and the node grants seating to another user."""
    E = hw.envelope_pb2
    print("== locks after their TTL")
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))

    def now():
        return int(time.time() * 1000)
    podium, podium_lapse = lapses["podium"]
    wait = (max(podium_lapse, lapses["seating"]) + 300 - now()) / 1000
    if wait > 0:
        wait_both_peers(teacher, student, lambda: False, wait)
    locker = Peer(hw, teacher.pynng, room_id, "locker", hw.common_pb2.ROLE_STUDENT, "Locker", "locker@B#2")
    try:
        locker.connect(args.node_b)
        back = wait_both_peers(teacher, student, lambda: all(
            "locker" in p.room.users and p.room.online(p.room.users["locker"]) for p in (teacher, student)))
        seating = student.room.locks["seating"]["grant"]
        models = [(p.room.lock_holder("podium", now()), p.room.lock_holder("seating", now())) for p in (teacher, student)]
        checks.check("past both TTLs: both replicas derive podium held by the teacher (its session began within the TTL) and "
                     "seating free, though its holder is online again (its session began after the lapse)",
                     back and models == [(("teach", podium, 10), None)] * 2, f"{models}")
        reply, _ = student.write("acquire_lock", name="podium", ttl_seconds=30)
        reply2, _ = student.write("acquire_lock", name="seating", ttl_seconds=30)
        fence = reply2.write_ack.fence if accepted(reply2) else 0
        checks.check("the node agrees: the student's acquire of podium is refused lock-held (the teacher's), of seating "
                     "ACCEPTED as a new grant (the formula's next fence at the student's node), not the old holder's",
                     reply.WhichOneof("body") == "write_ack" and reply.write_ack.error_code == "lock-held"
                     and "teach" in reply.write_ack.message and accepted(reply2)
                     and fence == hw.lock_fence(seating[1], student.node.node)
                     and student.wait_for(lambda: student.room.lock_holder("seating", now()) == ("stu-1", fence, 30)),
                     f"{show(reply)} / {show(reply2)}: fence {fence}, the old grant's {seating[1]}")
        if args.homeroom_bin:
            shown = subprocess.run([args.homeroom_bin, "lock", "--json", "--room", room_id, "--node", args.node_b],
                                   capture_output=True, text=True, timeout=20)
            try:
                node_view = json.loads(shown.stdout or "{}").get("locks")
            except ValueError:
                node_view = None
            student.pump()
            mine = [dict(name=l["name"], holder=l["holder"], fence=l["fence"], ttl_seconds=l["ttl_seconds"],
                         lapses_at_ms=l["lapses_at_ms"]) for l in student.room.lock_statuses(now())]
            checks.check("... and homeroom lock --json (through B) lists every lock as this client's replica derives it now",
                         node_view == mine and any(l["name"] == "podium" and l["holder"] == "teach" for l in mine),
                         f"{shown.stdout.strip()} {shown.stderr.strip()[-200:]} / {mine}")
        locker.write("leave_session", target="locker", session=locker.session)
    finally:
        locker.close_sockets()


def run_groups(args, hw, pynng, checks):
    """Breakout groups (PROTOCOL.md, "Breakout groups"; MESSAGING.md, "Breakout groups"): in a room of its
    own, a teacher (through node A) creates two groups and spreads three students (through A and B) over
    them; this client's replicas, and `homeroom group --json` through both nodes, agree on the groups; the
    members meet in their group rooms (`<room>:<id>`), where chat stays, and `homeroom group broadcast`
    reaches every group room; who may join a group room (a student only its own, a teacher any, a student
    banned in the main room none, and no longer listed) and write there (the gate is at every write: a
    student's message to another group's room it never joined, a moved student's next message in its old
    group's room while its leave there is taken, a banned student's); the bounds (17 members, banned ones
    not counted, 20 groups, small classrooms, 128-byte room ids), a removal that keeps its members' assignments, and a
    removal in a room that became a lecture hall; then the end, which voids every group and assignment,
    also those that arrive late."""
    E, C, S, D = hw.envelope_pb2, hw.common_pb2, hw.state_pb2, hw.delta_pb2
    room_id = f"groups-{os.getpid()}-{int(time.time())}"
    print(f"== breakout groups (room {room_id})")
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))

    def rejected(reply, code):
        return (reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == E.WRITE_STATUS_REJECTED
                and reply.write_ack.error_code == code)

    def cli(*words, room=None, node=None):
        """`homeroom group ... --json` as the operator (None when the binary was not given)."""
        if not args.homeroom_bin:
            return None
        shown = subprocess.run([args.homeroom_bin, "group", *words, "--json", "--room", room or room_id,
                                "--node", node or args.node_a], capture_output=True, text=True, timeout=20)
        try:
            return json.loads(shown.stdout or "{}")
        except ValueError:
            return {"stdout": shown.stdout, "stderr": shown.stderr[-300:]}

    def sync_patch(address):
        """The room as a node has it: a sync from the empty version vector (a RoomPatch)."""
        sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
        try:
            sock.dial(address, block=True)
            reply = teacher.request(lambda e: setattr(e.sync_request, "user", "teach"), sock=sock)
            patch = S.RoomPatch()
            patch.CopyFrom(reply.sync_response.patch)
            return patch
        finally:
            sock.close()

    teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", "teacher@A")
    students = [Peer(hw, pynng, room_id, f"stu-{i}", C.ROLE_STUDENT, name, f"student{i}@{node}")
                for i, (name, node) in enumerate((("Ada", "B"), ("Alan", "A"), ("Barbara", "B")), start=1)]
    address = {"A": args.node_a, "B": args.node_b}
    peers, visitors = [teacher] + students, []
    try:
        teacher.connect(args.node_a)
        for s in students:
            s.connect(address[s.label[-1]])
        everyone = [s.user for s in students]
        checks.require("groups: the teacher (through A) and three students (through A and B) join; the teacher sees them all",
                       teacher.wait_for(lambda: all((teacher.row(u) or {}).get("online") for u in everyone)))
        first = students[0]

        def agree(expected):
            return (teacher.wait_for(lambda: teacher.room.breakout() == expected)
                    and first.wait_for(lambda: first.room.breakout() == expected))

        reply, _ = first.write("set_breakout_group", id="g1", name="Red")
        as_delta = dict(role="student", op="set_breakout_group", author="stu-1", user=None,
                        body=D.SetBreakoutGroup(id="g1", name="Red"))
        checks.check("groups: a student's set_breakout_group is refused not-allowed (requires-moderator, as refusal() computes)",
                     rejected(reply, "not-allowed") and hw.refusal(as_delta) == "requires-moderator", show(reply))
        replies = [teacher.write("set_breakout_group", id=g, name=n)[0] for g, n in (("g1", "Red"), ("g2", "Blue"))]
        empty = [dict(id="g1", name="Red", room=f"{room_id}:g1", members=[]),
                 dict(id="g2", name="Blue", room=f"{room_id}:g2", members=[])]
        checks.require("groups: the teacher creates g1 (Red) and g2 (Blue): ACCEPTED; both replicas (A and B) derive the two "
                     "empty groups and their rooms <room>:g1, <room>:g2",
                     all(accepted(r) for r in replies) and agree(empty), f"{[show(r) for r in replies]}: {first.room.breakout()}")

        # Random-like, by hand: shuffle the students with a seed, then deal them out g1, g2, g1.
        seed = random.getrandbits(64)
        dealt = hw.carousel_shuffle(everyone, seed)
        placed = {u: f"g{i % 2 + 1}" for i, u in enumerate(dealt)}
        replies = [teacher.write("assign_breakout_group", target=u, group=g)[0] for u, g in placed.items()]
        expected = [dict(group, members=sorted((u for u, g in placed.items() if g == group["id"]), key=hw.natural_key))
                    for group in empty]
        checks.require(f"groups: three students dealt over the two groups (shuffle seed {seed}): every assignment ACCEPTED; "
                     "both replicas derive the same members and each student's group",
                     all(accepted(r) for r in replies) and agree(expected)
                     and all(first.room.group_of(u) == g and teacher.room.group_of(u) == g for u, g in placed.items())
                     and teacher.room.group_of("teach") is None,
                     f"{placed}: {first.room.breakout()}")
        reply, _ = teacher.write("assign_breakout_group", target="stu-1", group="g9")
        reply2, _ = teacher.write("assign_breakout_group", target="nobody", group="g1")
        reply3, _ = teacher.write("set_breakout_group", id="Bad Id", name="Red")
        checks.check("groups: an assignment to a group that does not exist is refused invalid, of an unknown user "
                     "user-not-found; a group id outside a-z 0-9 - _ not-allowed (invalid-value)",
                     rejected(reply, "invalid") and rejected(reply2, "user-not-found") and rejected(reply3, "not-allowed")
                     and hw.refusal(dict(role="teacher", op="set_breakout_group", author="teach", user=None,
                                         body=D.SetBreakoutGroup(id="Bad Id", name="Red"))) == "invalid-value",
                     f"{show(reply)} / {show(reply2)} / {show(reply3)}")
        if args.homeroom_bin:
            views = {n: cli(node=address[n]) for n in ("A", "B")}
            teacher.pump()
            checks.check("groups: homeroom group --json through A and through B lists the groups this client derives "
                         "(ids, names, rooms, members in natural order)",
                         all(v.get("groups") == teacher.room.breakout() for v in views.values()),
                         f"{views} / {teacher.room.breakout()}")

        # The members meet in their group rooms.
        print("== breakout groups: group rooms")
        members = {g: [s for s in students if placed[s.user] == g] for g in ("g1", "g2")}
        pair, alone = (members["g1"], members["g2"]) if len(members["g1"]) == 2 else (members["g2"], members["g1"])
        pair_group, alone_group = placed[pair[0].user], placed[alone[0].user]
        rooms = {g["id"]: g["room"] for g in first.room.breakout()}
        visitors = [Peer(hw, pynng, rooms[placed[s.user]], s.user, C.ROLE_STUDENT, s.name, f"{s.user}@{placed[s.user]}")
                    for s in pair + alone]
        for v, s in zip(visitors, pair + alone):
            v.connect(address[s.label[-1]])
        joined = all(v.room.id == f"{room_id}:{placed[v.user]}" and (v.row(v.user) or {}).get("online") for v in visitors)
        speaker, listener, other = visitors
        said = f"in {pair_group} {random.getrandbits(32):08x}".encode()
        reply, _ = speaker.write("send_message", type="chat", payload=said)
        heard = listener.wait_for(lambda: any(m["payload"] == said for m in listener.room.history(listener.user)))
        wait_both_peers(teacher, other, lambda: False, 0.3)
        leaked = [p.label for p in [teacher, other] + students if any(m["payload"] == said for m in p.room.history(p.user))]
        checks.check(f"groups: the two members of {pair_group} join its room {room_id}:{pair_group}; one's chat message there "
                     "reaches the other, and no main-room member nor the other group's room",
                     joined and accepted(reply) and heard and not leaked, f"{show(reply)}; heard {heard}, also in {leaked}")
        if args.homeroom_bin:
            text = f"broadcast {random.getrandbits(32):08x}"
            out = cli("broadcast", text)

            def got(v):
                return any(m["payload"] == text.encode() and m["type"] == "broadcast" and m["sender"] == "@operator"
                           for m in v.room.history(v.user))
            reached = all(v.wait_for(lambda v=v: got(v)) for v in visitors)
            teacher.pump()
            checks.check("groups: homeroom group broadcast (the operator, without a session there) sends one message of type "
                         "broadcast to every group room: each member receives it in its group room, the main room does not",
                         (out or {}).get("groups") == ["g1", "g2"] and reached
                         and not any(m["payload"] == text.encode() for m in teacher.room.history("teach")),
                         f"{out}; {[(v.label, got(v)) for v in visitors]}")

        # Who may join a group room (PROTOCOL.md, "Who may use a group room"): the main room decides.
        print("== breakout groups: who may join a group room")

        def join_code(user, role, group, node):
            """Joins `<room>:<group>` as a new peer through `node`: None when it joined (and leaves again), else the
            error code, beside the model's group_room_refusal on the teacher's replica of the main room."""
            peer = Peer(hw, pynng, f"{room_id}:{group}", user, role, user, f"{user}@{group} (door)")
            visitors.append(peer)
            reply = peer.connect(address[node])
            kind = reply.WhichOneof("body")
            if kind == "join_response":
                peer.write("leave_session", target=user, session=peer.session)
            code = None if kind == "join_response" else (reply.error.code if kind == "error" else kind)
            return code, teacher.room.group_room_refusal(user, role, group)

        member = pair[0]                                  # in pair_group (g1: the deal puts two students there)
        home = member.label[-1]
        other_node = "A" if home == "B" else "B"
        codes = {"other": join_code(member.user, C.ROLE_STUDENT, alone_group, home),
                 "own": join_code(member.user, C.ROLE_STUDENT, pair_group, other_node),
                 "not live": join_code(member.user, C.ROLE_STUDENT, "g7", home)}
        checks.check(f"groups: {member.user} (group {pair_group}) joining {room_id}:{alone_group} is refused not-in-group, "
                     f"joining its own {room_id}:{pair_group} through the other node is let in, and so is joining "
                     f"{room_id}:g7 (no such group: an ordinary room); group_room_refusal() agrees",
                     codes == {"other": ("not-in-group",) * 2, "own": (None, None), "not live": (None, None)}, f"{codes}")
        codes = {"teacher": join_code("teach", C.ROLE_TEACHER, alone_group, "B"),
                 "observer": join_code("watch", C.ROLE_OBSERVER, pair_group, "A")}
        checks.check(f"groups: the teacher visits {room_id}:{alone_group} (teachers and assistants visit any live group); "
                     f"an observer in no group is refused {room_id}:{pair_group} not-in-group; group_room_refusal() agrees",
                     codes == {"teacher": (None, None), "observer": ("not-in-group",) * 2}, f"{codes}")

        # ... and at every write there, not the join alone: a move takes effect at the next write; a leave is taken.
        print("== breakout groups: who may write in a group room")
        intruder = Peer(hw, pynng, f"{room_id}:{alone_group}", member.user, C.ROLE_STUDENT, member.name,
                        f"{member.user}@{alone_group} (no join)")
        reply, _ = intruder.write("send_message", via=address[home], type="chat", payload=b"not my group's room")
        model = teacher.room.group_room_refusal(member.user, C.ROLE_STUDENT, alone_group, "send_message")
        checks.check(f"groups: {member.user} (group {pair_group}) sending a chat message (a write_request of send_message) "
                     f"to {room_id}:{alone_group}, which it never joined, is refused not-in-group (not not-joined); "
                     "group_room_refusal() agrees",
                     rejected(reply, "not-in-group") and model == "not-in-group", f"{show(reply)}; model {model}")
        mover = Peer(hw, pynng, f"{room_id}:{pair_group}", member.user, C.ROLE_STUDENT, member.name,
                     f"{member.user}@{pair_group} (moved)")
        visitors.append(mover)
        entered = mover.connect(address[home]).WhichOneof("body") == "join_response"
        reply0, _ = teacher.write("assign_breakout_group", target=member.user, group=alone_group)
        moved = accepted(reply0) and all(p.wait_for(lambda p=p: p.room.group_of(member.user) == alone_group)
                                         for p in (member, teacher))
        reply, _ = mover.write("send_message", type="chat", payload=b"still in my old group's room")
        reply2, _ = mover.write("leave_session", target=member.user, session=mover.session)
        model = [teacher.room.group_room_refusal(member.user, C.ROLE_STUDENT, pair_group, op)
                 for op in ("send_message", "leave_session")]
        reply3, _ = teacher.write("assign_breakout_group", target=member.user, group=pair_group)   # back, for what follows
        back = accepted(reply3) and all(p.wait_for(lambda p=p: p.room.group_of(member.user) == pair_group)
                                        for p in (member, teacher, first))
        checks.check(f"groups: {member.user}, in {room_id}:{pair_group} and then moved from {pair_group} to {alone_group}, "
                     f"has its next chat message there refused not-in-group, while its leave_session there is ACCEPTED; "
                     f"group_room_refusal() agrees (moved back to {pair_group} afterwards)",
                     entered and moved and rejected(reply, "not-in-group") and accepted(reply2)
                     and model == ["not-in-group", None] and back,
                     f"joined {entered}, moved {moved} ({show(reply0)}); {show(reply)} / {show(reply2)}; model {model}; "
                     f"back {back}")

        # A ban in the main room: the banned student is no group's member and joins no group room.
        outcast = next(s for s in pair if s is not first)  # not stu-1, whose replica later checks use
        expected = [dict(g, members=[u for u in g["members"] if u != outcast.user]) for g in teacher.room.breakout()]
        exile = Peer(hw, pynng, f"{room_id}:{pair_group}", outcast.user, C.ROLE_STUDENT, outcast.name,
                     f"{outcast.user}@{pair_group} (banned)")
        visitors.append(exile)
        entered = exile.connect(address[outcast.label[-1]]).WhichOneof("body") == "join_response"
        reply, _ = teacher.write("ban", target=outcast.user)
        seen_ban = accepted(reply) and all(p.wait_for(lambda p=p: p.room.is_banned(outcast.user)) for p in (teacher, first))
        reply2, _ = exile.write("send_message", type="chat", payload=b"after my ban")
        reply3, _ = exile.write("leave_session", target=outcast.user, session=exile.session)
        model = [teacher.room.group_room_refusal(outcast.user, C.ROLE_STUDENT, pair_group, op)
                 for op in ("send_message", "leave_session")]
        checks.check(f"groups: {outcast.user}, in {room_id}:{pair_group} since before its ban in the main room, has its next "
                     "chat message there refused banned, while its leave_session there is ACCEPTED; group_room_refusal() agrees",
                     entered and seen_ban and rejected(reply2, "banned") and accepted(reply3) and model == ["banned", None],
                     f"joined {entered}; {show(reply)}; {show(reply2)} / {show(reply3)}; model {model}")
        listed = [u for g in teacher.room.breakout() for u in g["members"]]
        views = {n: cli(node=address[n]) for n in ("A", "B")} if args.homeroom_bin else {}
        teacher.pump()
        checks.check(f"groups: after a ban of {outcast.user} in the main room, it is listed in no group on either replica "
                     "(its assignment stays), and homeroom group --json through A and B lists the same",
                     seen_ban and outcast.user not in listed and first.room.breakout() == teacher.room.breakout() == expected
                     and teacher.room.group_of(outcast.user) == pair_group
                     and all(v.get("groups") == teacher.room.breakout() for v in views.values()),
                     f"{show(reply)}; {teacher.room.breakout()}; nodes {views}")
        codes = {"own": join_code(outcast.user, C.ROLE_STUDENT, pair_group, outcast.label[-1]),
                 "not live": join_code(outcast.user, C.ROLE_STUDENT, "g7", other_node)}
        checks.check(f"groups: the banned {outcast.user} joining its group's room {room_id}:{pair_group} is refused banned, "
                     f"and so is its join to {room_id}:g7 (no such group); group_room_refusal() agrees",
                     codes == {"own": ("banned",) * 2, "not live": ("banned",) * 2}, f"{codes}")

        # Bounds at the origin: 17 members per group, 20 live groups.
        print("== breakout groups: bounds")
        fills = [f"fill{i}" for i in range(1, 19)]
        sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
        try:
            sock.dial(args.node_a, block=True)
            for u in fills:                                                        # a join each: known users, cheaply
                def join(e, u=u):
                    j = e.join_request
                    j.user, j.role, j.session, j.name = u, C.ROLE_STUDENT, f"{u}-{random.getrandbits(32):08x}", u
                teacher.request(join, sock=sock, timeout_ms=JOIN_TIMEOUT_MS)
        finally:
            sock.close()
        teacher.wait_for(lambda: all(u in teacher.room.users for u in fills))
        reply, _ = teacher.write("set_breakout_group", id="g3", name="Full")
        replies = [teacher.write("assign_breakout_group", target=u, group="g3")[0] for u in fills[:17]]
        reply2, _ = teacher.write("assign_breakout_group", target=fills[17], group="g3")
        reply3, _ = teacher.write("assign_breakout_group", target=fills[0], group="g3")
        full = teacher.wait_for(lambda: len(next((g["members"] for g in teacher.room.breakout() if g["id"] == "g3"), [])) == 17)
        order = next((g["members"] for g in teacher.room.breakout() if g["id"] == "g3"), [])
        checks.check("groups: 17 students fill g3 (ACCEPTED); the 18th is refused limit-reached, while a member's assignment "
                     "again is not; members are listed in natural order (fill2 before fill10)",
                     accepted(reply) and all(accepted(r) for r in replies) and rejected(reply2, "limit-reached")
                     and accepted(reply3) and full and order == fills[:17],
                     f"{show(reply2)} / {show(reply3)}; {order}")
        reply, _ = teacher.write("ban", target=fills[0])
        reply2, _ = teacher.write("assign_breakout_group", target=fills[17], group="g3")
        refill = teacher.wait_for(lambda: next((g["members"] for g in teacher.room.breakout() if g["id"] == "g3"), []) == fills[1:])
        checks.check(f"groups: once {fills[0]} is banned it is no member of g3 and does not count toward the 17: "
                     f"{fills[17]} is ACCEPTED, and g3 lists {fills[1]} to {fills[17]}",
                     accepted(reply) and accepted(reply2) and refill,
                     f"{show(reply)} / {show(reply2)}; {next((g['members'] for g in teacher.room.breakout() if g['id'] == 'g3'), [])}")
        replies = [teacher.write("set_breakout_group", id=f"g{i}", name=f"Group {i}")[0] for i in range(4, 21)]
        reply, _ = teacher.write("set_breakout_group", id="g21", name="One too many")
        reply2, _ = teacher.write("set_breakout_group", id="g1", name="Red, renamed")
        live = teacher.wait_for(lambda: len(teacher.room.breakout()) == 20 and teacher.room.breakout()[0]["name"] == "Red, renamed")
        checks.check("groups: 20 live groups (g4 to g20 ACCEPTED); a 21st is refused limit-reached, renaming one is not",
                     all(accepted(r) for r in replies) and rejected(reply, "limit-reached") and accepted(reply2) and live,
                     f"{show(reply)} / {show(reply2)}; {len(teacher.room.breakout())} live")
        lone = alone[0].user
        reply, _ = teacher.write("set_breakout_group", id=alone_group, removed=True)
        gone = teacher.wait_for(lambda: alone_group not in [g["id"] for g in teacher.room.breakout()])
        back_home = teacher.room.group_of(lone) is None and teacher.room.assignments.get(lone, (None,))[0] == alone_group
        reply2, _ = teacher.write("set_breakout_group", id=alone_group, name="Blue again")
        again = teacher.wait_for(lambda: any(g["id"] == alone_group and g["name"] == "Blue again" and g["members"] == [lone]
                                             for g in teacher.room.breakout()))
        checks.check(f"groups: removing {alone_group} puts {lone} back in the main room but keeps its assignment; "
                     f"{alone_group} created again has {lone} again",
                     accepted(reply) and gone and back_home and accepted(reply2) and again,
                     f"{show(reply)} / {show(reply2)}; {teacher.room.breakout()[:2]}")
        if args.homeroom_bin:
            view = cli(node=args.node_b)
            teacher.pump()
            checks.check("groups: ... homeroom group --json through B lists the same 20 groups, in natural order "
                         "(g2, g3, ..., g10, ..., g20), and their members",
                         (view or {}).get("groups") == teacher.room.breakout()
                         and [g["id"] for g in teacher.room.breakout()] == [f"g{i}" for i in range(1, 21)],
                         f"{[g.get('id') for g in (view or {}).get('groups', [])]}")

        # The end voids every group and assignment, on every replica, whatever arrives late.
        print("== breakout groups: the end")
        before = sync_patch(args.node_a)                                       # the node that took them
        reply, _ = teacher.write("end_breakout")
        ended = accepted(reply) and all(p.wait_for(lambda p=p: p.room.breakout() == [] and not p.room.groups
                                                   and not p.room.assignments) for p in (teacher, first))
        views = {n: cli(node=address[n]) for n in ("A", "B")} if args.homeroom_bin else {}
        checks.check("groups: end_breakout is ACCEPTED; both replicas drop every group and assignment (everyone is in the "
                     "main room), and homeroom group --json through A and B lists no groups",
                     ended and all(first.room.group_of(u) is None for u in everyone + fills)
                     and all(v.get("groups") == [] for v in views.values()),
                     f"{show(reply)}; groups {first.room.groups}, nodes {views}")
        end_stamp = first.room.breakout_ended
        after = sync_patch(args.node_b)

        def late(ops, clock):
            """A batch from an origin of its own (so its dots are new), stamped at `clock`, by the teacher."""
            batch = D.DeltaBatch(origin=0x5EED, strings=["teach", "stu-1"])
            for i, (op, fields) in enumerate(ops):
                d = batch.deltas.add(clock_delta=clock if i == 0 else 0, author=0, author_role=C.ROLE_TEACHER)
                getattr(d, op).SetInParent()
                for k, v in fields.items():
                    setattr(getattr(d, op), k, v)
            return batch
        replica = hw.Room(room_id).merge_patch(after)
        stale = late([("set_breakout_group", dict(id="g1", name="Late")), ("assign_breakout_group", dict(user=2, group="g1"))],
                     end_stamp[0] - (1 << 16))
        applied = replica.apply_batch(stale)
        ignored = (len(applied) == 2 and all(d["refused"] is None for d in applied) and replica.breakout() == []
                   and not replica.groups and not replica.assignments and replica.seen.contains(0x5EED, 2))
        fresh = hw.Room(room_id).merge_patch(after)
        fresh.apply_batch(late([("set_breakout_group", dict(id="g1", name="Later")), ("assign_breakout_group", dict(user=2, group="g1"))],
                               end_stamp[0] + (1 << 16)))
        checks.check("groups: a late group and assignment stamped 1 ms before the end are applied (seen, not refused) but "
                     "ignored by the model; the same stamped 1 ms after it are taken",
                     ignored and fresh.breakout() == [dict(id="g1", name="Later", room=f"{room_id}:g1", members=["stu-1"])],
                     f"late: {replica.breakout()}, {replica.assignments}; after: {fresh.breakout()}")
        orders = [hw.Room(room_id).merge_patch(before).merge_patch(after), hw.Room(room_id).merge_patch(after).merge_patch(before)]
        checks.check("groups: merging the snapshot from before the end and the one after it, in either order, gives the "
                     "same replica: no groups, no assignments, the end's stamp",
                     all(r.breakout() == [] and not r.groups and not r.assignments and r.breakout_ended == end_stamp for r in orders)
                     and state_of(orders[0]) == state_of(orders[1]) and len(before.breakout_groups) == 20,
                     f"{[(len(r.groups), len(r.assignments), r.breakout_ended) for r in orders]}, before: "
                     f"{len(before.breakout_groups)} groups")

        # Only small classrooms have groups, and a group's room id is at most 128 bytes.
        print("== breakout groups: other rooms")
        hall = Peer(hw, pynng, f"{room_id}-hall", "teach", C.ROLE_TEACHER, "Grace", "teacher@A (hall)")
        long_room = f"{room_id}-" + "x" * (120 - len(room_id) - 1)
        tall = Peer(hw, pynng, long_room, "teach", C.ROLE_TEACHER, "Grace", "teacher@A (long id)")
        visitors += [hall, tall]
        hall.connect(args.node_a)
        reply0, _ = hall.write("set_breakout_group", id="g1", name="Red")        # a small classroom still
        reply, _ = hall.write("set_room_type", type=C.ROOM_TYPE_LECTURE_HALL)
        reply2, _ = hall.write("set_breakout_group", id="g2", name="Blue")
        reply3, _ = hall.write("set_breakout_group", id="g1", name="Red, renamed")
        stays = hall.wait_for(lambda: [g["id"] for g in hall.room.breakout()] == ["g1"] and hall.room.breakout()[0]["name"] == "Red")
        checks.check("groups: a room made a lecture hall after its group g1 was created refuses creating g2 and renaming g1: "
                     "invalid (small classrooms only); g1 stays live",
                     accepted(reply0) and accepted(reply) and rejected(reply2, "invalid") and rejected(reply3, "invalid") and stays,
                     f"{show(reply0)} / {show(reply)} / {show(reply2)} / {show(reply3)}; {hall.room.breakout()}")
        reply, _ = hall.write("set_breakout_group", id="g1", removed=True)
        cleared = hall.wait_for(lambda: hall.room.breakout() == [])
        view = cli(room=f"{room_id}-hall") if args.homeroom_bin else {"groups": []}
        checks.check("groups: ... removing g1 there is ACCEPTED (a removal is taken in any room type): no group is live, "
                     "on this replica and in homeroom group --json",
                     accepted(reply) and cleared and (view or {}).get("groups") == [], f"{show(reply)}; {view}")
        tall.connect(args.node_a)
        reply, _ = tall.write("set_breakout_group", id="abcdefghijklmnop", name="Long")
        reply2, _ = tall.write("set_breakout_group", id="g1", name="Short")
        checks.check(f"groups: in a room whose id is {len(long_room)} bytes, a group whose room id would be "
                     f"{len(long_room) + 17} bytes is refused invalid; one whose room id is {len(long_room) + 3} is ACCEPTED",
                     len(long_room) == 120 and rejected(reply, "invalid") and accepted(reply2), f"{show(reply)} / {show(reply2)}")
    finally:
        for peer in peers + visitors:
            peer.close_sockets()


def cluster_open(hw, cluster_key_file, payload):
    """The envelope bytes of an "HRX1" node-to-node payload ("Authentication": key = BLAKE2b-256 of
    "homeroom cluster traffic v1" keyed with the cluster key, additional data "HRX1"), or None."""
    import ctypes
    sodium = hw._libsodium()
    secret = bytes.fromhex(open(cluster_key_file).read().strip())          # cluster.key: 32 bytes in hex
    label = b"homeroom cluster traffic v1"
    key = ctypes.create_string_buffer(32)
    if sodium.crypto_generichash(key, ctypes.c_size_t(32), label, ctypes.c_ulonglong(len(label)),
                                 secret, ctypes.c_size_t(len(secret))) != 0:
        return None
    if payload[:4] != b"HRX1" or len(payload) < 4 + 24 + 16:
        return None
    nonce, cipher = payload[4:28], payload[28:]
    out, written = ctypes.create_string_buffer(len(cipher)), ctypes.c_ulonglong(0)
    failed = sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(
        out, ctypes.byref(written), None, cipher, ctypes.c_ulonglong(len(cipher)),
        b"HRX1", ctypes.c_ulonglong(4), nonce, key.raw)
    return None if failed else out.raw[:written.value]


def run_closed(args, hw, pynng, checks):
    """Closed rooms ("Authentication", "Closed rooms"): nodes C and D, started with --token-key and
    --cluster-key. A teacher joins through C, student 1 through D, student 2 through C, each with its token."""
    E, C = hw.envelope_pb2, hw.common_pb2
    room_id = args.closed_room or f"closed-{os.getpid()}-{int(time.time())}"
    node_c = args.closed_node
    node_d = args.closed_node_b or args.closed_node
    print(f"== closed room {room_id}: node C {node_c}" + (f", node D {args.closed_node_b}" if args.closed_node_b else ""))

    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))

    def error_code(reply):
        return reply.error.code if reply.WhichOneof("body") == "error" else None

    def keys_ok(keys):
        return (keys is not None and len(keys.room_key_id) == 8 and len(keys.user_key_id) == 8
                and len(keys.room_key) == 32 and len(keys.user_key) == 32)

    def joined_with_keys(reply):
        return (reply.WhichOneof("body") == "join_response" and reply.join_response.HasField("keys")
                and keys_ok(reply.join_response.keys))

    def ids(keys):
        return f"room key {keys.room_key_id.hex()}, user key {keys.user_key_id.hex()}" if keys else "no keys"

    def hello(address, peer):
        sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
        try:
            sock.dial(address, block=True)
            return peer.hello(sock)
        finally:
            sock.close()

    def drain(sock, seconds):
        """Every message a SUB socket delivers within `seconds`."""
        got, until = [], time.monotonic() + seconds
        while True:
            try:
                got.append(sock.recv())
            except pynng.Timeout:
                if time.monotonic() >= until:
                    return got

    def copy(keys):
        k = E.TopicKeys()
        k.CopyFrom(keys)
        return k

    def in_history(peer, payload):
        return any(m["payload"] == payload for m in peer.room.history(peer.user))

    teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", "teacher@C", token=args.teacher_token)
    student = Peer(hw, pynng, room_id, "stu-1", C.ROLE_STUDENT, "Ada", "student1@D", token=args.student_token)
    student2 = Peer(hw, pynng, room_id, "stu-2", C.ROLE_STUDENT, "Alan", "student2@C", token=args.student2_token)
    others, sniffers, streamed = [], [], {}
    try:
        # Flow 1 on a node with --token-key; with --cluster-key on both, C and D still form a cluster.
        if args.closed_node_b:
            deadline = time.monotonic() + 5.0
            while True:
                info = hello(node_c, teacher)
                formed = any(p.address == args.closed_node_b and p.status == E.PEER_STATUS_ALIVE for p in info.peers)
                if formed or time.monotonic() >= deadline:
                    break
                time.sleep(0.1)
            checks.require("closed: node C's hello, with a token, lists node D (same cluster key) as an ALIVE peer",
                           formed, f"peers {[(p.address, E.PeerStatus.Name(p.status)) for p in info.peers]}")

        reply = teacher.connect(node_c)
        checks.require("closed: the teacher joins through C with its token: TopicKeys with 8-byte ids and 32-byte keys",
                       joined_with_keys(reply) and teacher.keys is not None, f"{show(reply)}; {ids(teacher.keys)}")
        probe = Peer(hw, pynng, room_id, "probe", C.ROLE_OBSERVER, "probe", "probe@C")
        anonymous, known = hello(node_c, probe), hello(node_c, teacher)
        checks.check("closed: a hello without a token is answered (node, publish address) but reveals no rooms and no peers; "
                     "with a token, no rooms either",
                     anonymous.node == teacher.node.node and bool(anonymous.publish_address) and not anonymous.rooms
                     and not anonymous.peers and not known.rooms,
                     f"without a token: {len(anonymous.rooms)} rooms, {len(anonymous.peers)} peers; "
                     f"with one: {len(known.rooms)} rooms, {len(known.peers)} peers")

        print("== closed room: refused joins")
        for label, peer, code in (
                ("a join without a token", Peer(hw, pynng, room_id, "stu-1", C.ROLE_STUDENT, "Ada", "anonymous@C"),
                 "token-missing"),
                ("a join with a token for another room",
                 Peer(hw, pynng, room_id, "stu-1", C.ROLE_STUDENT, "Ada", "elsewhere@C", token=args.wrong_room_token),
                 "token-wrong-room"),
                ("a join as teacher with the student's token",
                 Peer(hw, pynng, room_id, "stu-1", C.ROLE_TEACHER, "Ada", "impostor@C", token=args.student_token),
                 "token-identity-mismatch")):
            if peer.token is None and label != "a join without a token":
                continue                                                          # no such token given
            others.append(peer)
            reply = peer.connect(node_c)
            checks.check(f"closed: {label} is refused: error {code}", error_code(reply) == code, show(reply))
            if peer.token is None:                                                # the other requests need one too
                r_sync = peer.request(lambda e: e.sync_request.SetInParent())
                r_digest = peer.request(lambda e: e.digest.SetInParent())
                r_write, _ = peer.write("set_hand", target="stu-1", raised=True)
                checks.check("closed: so are a sync, a digest and a write without a token: token-missing",
                             [error_code(r) for r in (r_sync, r_digest, r_write)] == ["token-missing"] * 3,
                             f"{show(r_sync)} / {show(r_digest)} / {show(r_write)}")
            peer.close_sockets()

        print("== closed room: joins with tokens")
        reply, reply2 = student.connect(node_d), student2.connect(node_c)
        checks.require("closed: student 1 (through D) and student 2 (through C) join with their tokens and get TopicKeys",
                       joined_with_keys(reply) and joined_with_keys(reply2),
                       f"student 1: {show(reply)}, {ids(student.keys)}; student 2: {show(reply2)}, {ids(student2.keys)}")
        tk, sk, s2k = teacher.keys, student.keys, student2.keys
        checks.check("closed: on one node the room key is shared and the user keys are per user; each node has its own keys",
                     tk.room_key_id == s2k.room_key_id and tk.room_key == s2k.room_key
                     and tk.user_key_id != s2k.user_key_id and tk.user_key != s2k.user_key
                     and (node_d == node_c or (sk.room_key_id != tk.room_key_id and sk.room_key != tk.room_key)),
                     f"teacher@C {ids(tk)}; student2@C {ids(s2k)}; student1@D {ids(sk)}")
        checks.check("closed: student 1 sees the teacher who joined through C (opened messages only)",
                     student.wait_for(lambda: (student.row("teach") or {}).get("online") is True)
                     and student.statuses.get("opened", 0) > 0 and set(student.statuses) <= {"opened", "unknown-key"},
                     f"statuses {student.statuses}")

        # A raw SUB socket on each node's PUB socket, subscribed to everything (nng subscriptions are
        # not authenticated), from before the writes below.
        for address in dict.fromkeys([teacher.node.publish_address, student.node.publish_address]):
            sniffer = pynng.Sub0(recv_max_size=0, recv_buffer_size=8192, recv_timeout=20)
            sniffer.subscribe(b"")
            sniffer.dial(address, block=True)
            sniffers.append(sniffer)
        # The room's stream on C ("Room streams"), subscribed to everything and read at the end of the phase, after
        # the group rooms' traffic; beside it, the same on C's tcp:// publish address, the control.
        checks.require("closed: node C's hello says room_streams; the members' SUB sockets follow their room streams",
                       teacher.node.room_streams and all(peer.sub_address.startswith("ws://") for peer in (teacher, student, student2)),
                       str([(peer.label, peer.node.room_streams, peer.sub_address) for peer in (teacher, student, student2)]))
        streamed["stream"] = raw_sub(pynng, room_stream_url(teacher.node.publish_address, room_id))
        streamed["tcp"] = raw_sub(pynng, teacher.node.publish_address)
        time.sleep(0.1)                                                           # attached (Flow 2)

        print("== closed room: sealed live deltas")
        student.pump()
        opened_before = student.statuses.get("opened", 0)
        student.hold_sync = True                                                  # live only: no sync may bring it
        reply, _ = teacher.write("set_stage", target="stu-1", on=True)
        dot = reply.write_ack.dot
        live = student.wait_for(lambda: student.seen_dot(dot) and (student.row("stu-1") or {}).get("stage") is True)
        student.hold_sync = False
        checks.check("closed: the teacher puts student 1 on stage through C; student 1 receives it live on D's SUB socket, "
                     "open_topic gives opened, and it applies",
                     accepted(reply) and live and student.statuses.get("opened", 0) > opened_before,
                     f"{show(reply)}; opened {student.statuses.get('opened', 0) - opened_before} messages")

        secret = f"closed-room chat {random.getrandbits(64):016x}".encode()
        whisper = f"closed-room whisper {random.getrandbits(64):016x}".encode()
        reply, _ = teacher.write("send_message", type="chat", payload=secret)
        reply2, _ = teacher.write("send_peer_message", target="stu-1", type="whisper", payload=whisper, previous=0)
        got = student.wait_for(lambda: in_history(student, secret) and in_history(student, whisper))
        private_opened = any(status == "opened" and whisper in (body or b"") and message.startswith(student.private_topic())
                             for message, status, body in student.sealed)
        checks.check("closed: the teacher's chat message and a whisper to student 1 reach it (the whisper on its private "
                     "topic, opened with its user key)",
                     accepted(reply) and accepted(reply2) and got and private_opened, f"{show(reply)} / {show(reply2)}")

        print("== closed room: what anyone on the PUB sockets sees")
        time.sleep(0.2)
        sniffed = [m for s in sniffers for m in drain(s, 0.1)]
        sealed, node_sealed, beats, other = [], [], [], []
        for m in sniffed:
            if m[:1] == b"\x02":
                (beats if m[1:5] == b"HRX1" else other).append(m[1:])
            elif m[:1] == b"\x01":
                end = m.find(b"\x00")
                (node_sealed if end > 0 and m[end + 1:end + 5] == b"HRX1" else other).append(m[end + 1:])
            else:
                parts = hw.split_client_topic(m)
                (sealed if parts is not None and parts[1][:4] == b"HRE1" else other).append(m)
        checks.check("closed: a SUB socket subscribed to b'' on C's and D's PUB sockets sees client topics only as HRE1 "
                     "and node topics (01, 02) only as HRX1",
                     sealed and node_sealed and beats and not other,
                     f"{len(sealed)} HRE1, {len(node_sealed)} 01 HRX1, {len(beats)} 02 HRX1, {len(other)} other"
                     + (f": {other[0][:40]!r}" if other else ""))
        leaked = [m for m in sniffed if secret in m or whisper in m]
        members = [k for k in (teacher.keys, student.keys) if k is not None]
        holds = [body for m in sealed for k in members
                 for status, body in [hw.open_topic(*hw.split_client_topic(m)[:2], k, hw.split_client_topic(m)[2])]
                 if status == "opened" and secret in body]
        checks.check("closed: ... never the plaintext of the teacher's chat message or whisper, which a member's room key "
                     "opens from the sniffed HRE1 messages",
                     not leaked and bool(holds), f"{len(leaked)} messages hold the plaintext; opened copies {len(holds)}")
        if args.cluster_key:
            opened = [cluster_open(hw, args.cluster_key, p) for p in node_sealed + beats]
            carried = any(b is not None and secret in b for b in opened)
            checks.check("closed: every sniffed HRX1 message opens with the cluster key (BLAKE2b-256 key, additional data "
                         "HRX1), and one carries the chat delta to the other node",
                         opened and all(b is not None for b in opened) and carried,
                         f"{sum(b is not None for b in opened)} of {len(opened)} opened")

        print("== closed room: forgeries")
        message, _, body = next((x for x in reversed(student.sealed)
                                 if x[1] == "opened" and not x[0].startswith(b"@")), (None, None, None))
        checks.require("closed: student 1 kept an opened room-topic message to tamper with", message is not None)
        topic, payload, private = hw.split_client_topic(message)
        flipped = bytearray(payload)
        flipped[36 + (len(payload) - 36) // 2] ^= 0x01                           # one ciphertext byte
        status = hw.open_topic(topic, bytes(flipped), student.keys, private)[0]
        checks.check("closed: a sealed message with one ciphertext byte flipped gives forged", status == "forged", status)
        moved = hw.open_topic(b"elsewhere\x00", payload, student.keys, False)[0]
        clear = hw.open_topic(topic, body, student.keys, private)[0]
        checks.check("closed: so do the same payload under another room's topic, and a clear envelope from a node "
                     "whose keys we hold", moved == "forged" and clear == "forged", f"{moved}, {clear}")
        whispers = [m for m in sniffed if m.startswith(student.private_topic()) and m[len(student.private_topic()):][:4] == b"HRE1"]
        if whispers:
            topic, payload, _ = hw.split_client_topic(whispers[-1])
            fake = copy(student2.keys)
            status = hw.open_topic(topic, payload, fake, True)[0]
            fake.user_key_id = payload[4:12]                                      # student 2's key under student 1's id
            status2 = hw.open_topic(topic, payload, fake, True)[0]
            checks.check("closed: student 2's keys do not open student 1's private messages "
                         "(unknown-key; forged with its user key under student 1's key id)",
                         status == "unknown-key" and status2 == "forged", f"{status}, {status2}")

        print("== closed room: a ban changes the keys")
        student2.hold_sync = True                                                 # its syncs are refused from now on
        drain(student2.sub, 0.05)
        teacher.pump()
        student.pump()
        s1_old, s2_old = copy(student.keys), copy(student2.keys)
        unknown_before, changes_before = student.statuses.get("unknown-key", 0), len(student.key_changes)
        reply, _ = teacher.write("ban", target="stu-2")
        banned = accepted(reply) and student.wait_for(
            lambda: student.room.users.get("stu-2") is not None and student.room.users["stu-2"].banned is not None)
        drain(student2.sub, 0.2)                                                  # the ban itself, under whatever key
        after = f"closed-room after the ban {random.getrandbits(64):016x}".encode()
        reply2, _ = teacher.write("send_message", type="chat", payload=after)
        seen_by_2 = [m for m in drain(student2.sub, 0.5) if m.startswith(room_id.encode() + b"\x00")]
        teacher_got = teacher.wait_for(lambda: in_history(teacher, after))
        statuses = [hw.open_topic(*hw.split_client_topic(m)[:2], s2_old, False)[0] for m in seen_by_2]
        new_ids = sorted({hw.split_client_topic(m)[1][4:12].hex() for m in seen_by_2})
        theirs = [hw.open_topic(*hw.split_client_topic(m)[:2], teacher.keys, False) for m in seen_by_2]
        checks.check("closed: the teacher bans student 2; the teacher's next message is published under a new room key id, "
                     "which student 2's old keys give unknown-key",
                     banned and accepted(reply2) and bool(seen_by_2) and set(statuses) == {"unknown-key"}
                     and s2_old.room_key_id.hex() not in new_ids and teacher_got
                     and any(s == "opened" and after in b for s, b in theirs),
                     f"{show(reply)} / {show(reply2)}; old id {s2_old.room_key_id.hex()}, new {new_ids}; student 2: {statuses}; "
                     f"teacher's key changes {[(k, a.hex(), b.hex()) for k, a, b in teacher.key_changes]}")
        r_sync = student2.request(lambda e: setattr(e.sync_request, "user", "stu-2"))
        r_digest = student2.request(lambda e: e.digest.SetInParent())
        again = Peer(hw, pynng, room_id, "stu-2", C.ROLE_STUDENT, "Alan", "student2-again@C", token=args.student2_token)
        others.append(again)
        r_join = again.connect(node_c)
        checks.check("closed: student 2's sync and digest are refused with banned (no new keys), and so is a new join",
                     error_code(r_sync) == "banned" and error_code(r_digest) == "banned" and error_code(r_join) == "banned"
                     and again.keys is None,
                     f"sync: {show(r_sync)}; digest: {show(r_digest)}; join: {show(r_join)}")
        reply, _ = teacher.write("send_peer_message", target="stu-2", type="whisper", payload=b"after the ban", previous=0)
        private_2 = [m for m in drain(student2.sub, 0.5) if m.startswith(student2.private_topic())]
        statuses = [hw.open_topic(*hw.split_client_topic(m)[:2], s2_old, True)[0] for m in private_2]
        checks.check("closed: a whisper to student 2 after the ban is on its private topic under a new user key id too "
                     "(its old keys give unknown-key)",
                     accepted(reply) and bool(private_2) and set(statuses) == {"unknown-key"}, f"{show(reply)}; {statuses}")
        got = student.wait_for(lambda: in_history(student, after))
        changes = student.key_changes[changes_before:]
        checks.check("closed: student 1 (still a member) gets unknown-key, syncs at once and gets new keys in the "
                     "sync_response, and the message",
                     got and student.statuses.get("unknown-key", 0) > unknown_before
                     and any(kind == "sync_response" and new != s1_old.room_key_id for kind, _, new in changes),
                     f"unknown-key {student.statuses.get('unknown-key', 0) - unknown_before}; key changes "
                     f"{[(k, a.hex(), b.hex()) for k, a, b in changes]}")
        student.pump()
        opened_before = student.statuses.get("opened", 0)
        student.hold_sync = True
        following = f"closed-room next {random.getrandbits(64):016x}".encode()
        reply, _ = teacher.write("send_message", type="chat", payload=following)
        live = student.wait_for(lambda: in_history(student, following))
        student.hold_sync = False
        checks.check("closed: ... and opens the next live message with them",
                     accepted(reply) and live and any(s == "opened" and following in (b or b"") for _, s, b in student.sealed)
                     and student.statuses.get("opened", 0) > opened_before, show(reply))
        old_status = [hw.open_topic(*hw.split_client_topic(m)[:2], k, False)[0]
                      for m, s, b in student.sealed if s == "opened" and following in (b or b"") for k in (s2_old, s1_old)]
        checks.check("closed: neither student's keys from before the ban open it", old_status and set(old_status) == {"unknown-key"},
                     str(old_status))

        # A class's token also opens the rooms of its breakout groups (`<room>:<group id>`), as the main room
        # allows ("Who may use a group room"), and no other room.
        reply, _ = teacher.write("set_breakout_group", id="g2", name="Blue")
        live = accepted(reply) and student.wait_for(lambda: [g["id"] for g in student.room.breakout()] == ["g2"])
        door = {}
        for who, token, role, group in (("stu-1", args.student_token, C.ROLE_STUDENT, "g2"),
                                        ("stu-2", args.student2_token, C.ROLE_STUDENT, "g1"),
                                        ("teach", args.teacher_token, C.ROLE_TEACHER, "g2")):
            visit = Peer(hw, pynng, f"{room_id}:{group}", who, role, who, f"{who}@D ({group})", token=token)
            others.append(visit)
            answer = visit.connect(node_d)
            door[who] = error_code(answer) or ("joined" if joined_with_keys(answer) else show(answer))
            if visit.session and answer.WhichOneof("body") == "join_response":
                visit.write("leave_session", target=who, session=visit.session)
        checks.check("closed: with group g2 live, student 1's token (it is in no group) is refused <room>:g2 not-in-group, "
                     "banned student 2's token is refused <room>:g1 banned (no such group: the ban alone), and the "
                     "teacher's token opens <room>:g2",
                     live and door == {"stu-1": "not-in-group", "stu-2": "banned", "teach": "joined"},
                     f"{show(reply)}; {door}")
        grouped = Peer(hw, pynng, f"{room_id}:g1", "stu-1", C.ROLE_STUDENT, "Ada", "student1@D (g1)", token=args.student_token)
        elsewhere = Peer(hw, pynng, f"{room_id}x:g1", "stu-1", C.ROLE_STUDENT, "Ada", "student1@D (x:g1)", token=args.student_token)
        others += [grouped, elsewhere]
        reply, reply2 = grouped.connect(node_d), elsewhere.connect(node_d)
        checks.check("closed: student 1's class token opens no room of a group that is not live: <room>:g1 is refused "
                     "group-not-live (a class token makes no room at will), <room>x:g1 token-wrong-room",
                     error_code(reply) == "group-not-live" and error_code(reply2) == "token-wrong-room",
                     f"{show(reply)}; {show(reply2)}")
        if grouped.session and joined_with_keys(reply):
            grouped.write("leave_session", target="stu-1", session=grouped.session)
        # In a closed room every request with the token to a group room is checked, by the token's user and role:
        # once student 1 is in g1, its token reads g1's room, not g2's.
        reply, _ = teacher.write("set_breakout_group", id="g1", name="Red")
        reply2, _ = teacher.write("assign_breakout_group", target="stu-1", group="g1")
        placed = accepted(reply) and accepted(reply2) and student.wait_for(lambda: student.room.group_of("stu-1") == "g1")
        reader = Peer(hw, pynng, f"{room_id}:g2", "stu-1", C.ROLE_STUDENT, "Ada", "student1@D (g2, no join)",
                      token=args.student_token)
        own = Peer(hw, pynng, f"{room_id}:g1", "stu-1", C.ROLE_STUDENT, "Ada", "student1@D (g1, no join)",
                   token=args.student_token)
        sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
        try:
            sock.dial(node_d, block=True)
            r_sync = reader.request(lambda e: setattr(e.sync_request, "user", "stu-1"), sock=sock)
            r_digest = reader.request(lambda e: e.digest.SetInParent(), sock=sock)
            r_own = own.request(lambda e: setattr(e.sync_request, "user", "stu-1"), sock=sock)
        finally:
            sock.close()
        r_write, _ = reader.write("send_message", via=node_d, type="chat", payload=b"not my group's room")
        codes = [error_code(r) for r in (r_sync, r_digest, r_write)]
        model = student.room.group_room_refusal("stu-1", C.ROLE_STUDENT, "g2")
        checks.check("closed: once student 1 is in g1 (ACCEPTED, seen through D), its token's sync_request to <room>:g2 is "
                     "refused not-in-group (an error, no TopicKeys), and so are its digest and a chat message there (an "
                     "error, not a write_ack); its sync of <room>:g1 gets a sync_response with that room's TopicKeys; "
                     "group_room_refusal() agrees",
                     placed and codes == ["not-in-group"] * 3 and model == "not-in-group"
                     and r_own.WhichOneof("body") == "sync_response" and keys_ok(r_own.sync_response.keys),
                     f"{show(reply)} / {show(reply2)}; sync {show(r_sync)}; digest {show(r_digest)}; write {show(r_write)}; "
                     f"own room {show(r_own)}; model {model}")
        for peer in (student, teacher):
            reply, _ = peer.write("leave_session", target=peer.user, session=peer.session)
            checks.check(f"closed: {peer.label} leaves: ACCEPTED", accepted(reply), show(reply))

        time.sleep(0.2)
        got = {name: [] for name in streamed}
        drain_into(pynng, streamed, got)
        room_topic = room_id.encode() + b"\x00"
        topics = {name: by_topic(hw, messages) for name, messages in got.items()}
        sealed_here = [m for m in got["stream"] if m.startswith(room_topic) and m[len(room_topic):][:4] == b"HRE1"]
        stray = {topic: n for topic, (n, _) in topics["stream"].items() if topic != room_topic}
        control = topics["tcp"]
        groups = {topic: n for topic, (n, _) in control.items() if topic.startswith(room_id.encode() + b":")}
        private = sum(n for topic, (n, _) in control.items() if topic.startswith(b"@" + room_topic))
        checks.check("closed: a SUB socket subscribed to b'' on C's room stream (ws://.../v1/rooms/<room>), from the sealed "
                     "live deltas to the leaves, gets only HRE1 messages on the room's client topic: nothing of the group "
                     "rooms <room>:g1 and <room>:g2, no private topic, no node topic (01), no heartbeat (02), while C's "
                     "tcp:// publish address carried all of those",
                     bool(sealed_here) and len(sealed_here) == len(got["stream"]) and not stray
                     and groups and private and control.get(b"01") and control.get(b"02"),
                     f"stream: {len(sealed_here)} HRE1 of {len(got['stream'])} messages, "
                     f"{sum(len(m) for m in got['stream'])} bytes, other topics {stray}; tcp://: group rooms {groups}, "
                     f"{private} private, 01 {control.get(b'01', (0, 0))}, 02 {control.get(b'02', (0, 0))}")
    finally:
        for sock in sniffers + list(streamed.values()):
            sock.close()
        for peer in [teacher, student, student2] + others:
            peer.close_sockets()


def run_tls(args, hw, pynng, checks):
    """TLS (docs/PROTOCOL.md, "TLS"; docs/SECURITY.md, "TLS"): node T listens and publishes on tls+tcp://.
    pynng's nng verifies T's certificate against --tls-ca for --tls-server-name ("localhost", a DNS name
    the certificate lists, as the section advises), while the URLs keep T's 127.0.0.1. A teacher and a student join
    a room over TLS, write and follow live deltas; a client with another CA, a plain tcp:// dial to T's
    port and a TLS dial to plain node A get no reply, while the same request with the right CA gets one."""
    E, C = hw.envelope_pb2, hw.common_pb2
    room_id = f"tls-{os.getpid()}-{int(time.time())}"
    node_t = args.tls_node
    print(f"== tls room {room_id}: node T {node_t} (verified as {args.tls_server_name!r} against {args.tls_ca})")

    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))

    def tls_config(ca_file):
        # Keep the returned object referenced while a socket uses it: with pynng 0.8.0 a TLSConfig that is
        # garbage-collected right after the socket is made (passed inline) leaves dial(block=True) hanging.
        with open(ca_file, encoding="ascii") as f:
            return pynng.TLSConfig(pynng.TLSConfig.MODE_CLIENT, ca_string=f.read(), server_name=args.tls_server_name)

    right = tls_config(args.tls_ca)
    probe = Peer(hw, pynng, room_id, "probe", C.ROLE_OBSERVER, "probe", "probe@T")

    def hello_over(address, config):
        """(Heartbeat or None, what happened): one hello, one attempt, on a fresh REQ socket."""
        sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS,
                          reconnect_time_min=50, reconnect_time_max=200,
                          **({"tls_config": config} if config is not None else {}))
        events = []
        try:
            try:
                sock.dial(address, block=True)
            except pynng.NNGException as e:                                       # e.g. CryptoError: the handshake failed
                events.append(f"dial: {type(e).__name__}: {e}")
                sock.dial(address, block=False)                                   # keep dialing: the request is still sent
            try:
                info = probe.hello(sock, attempts=1)
            except Unavailable as e:
                events.append(str(e))
                return None, "; ".join(events)
            events.append(f"hello from node {info.node:x}")
            return info, "; ".join(events)
        finally:
            if config is not None:
                close_tls_socket(sock, "probe@T")
            else:
                sock.close()

    teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", "teacher@T", tls_config=right)
    student = Peer(hw, pynng, room_id, "stu-1", C.ROLE_STUDENT, "Ada", "student@T", tls_config=right)
    try:
        reply = teacher.connect(node_t)
        checks.require("tls: hello over tls+tcp:// (certificate verified against the CA) names T's publish address, "
                       "also tls+tcp://", teacher.node.node != 0 and teacher.node.publish_address.startswith("tls+tcp://"),
                       f"node {teacher.node.node:x}, publish {teacher.node.publish_address}")
        node_id = teacher.node.node
        checks.check("tls: the hello says room_streams, and the teacher's SUB socket follows its room stream over wss:// "
                     "(T's publish port, the same TLSConfig: CA and server name)",
                     teacher.node.room_streams and teacher.sub_address
                     == room_stream_url(teacher.node.publish_address, room_id, "teach") and teacher.sub_address.startswith("wss://"),
                     f"room_streams {teacher.node.room_streams}, SUB on {teacher.sub_address}")
        checks.require("tls: the teacher joins over tls+tcp:// and gets a snapshot",
                       reply.WhichOneof("body") == "join_response" and reply.join_response.WhichOneof("state") == "snapshot"
                       and reply.join_response.host == node_id and (teacher.row("teach") or {}).get("online") is True,
                       show(reply))
        teacher.pump()
        teacher.hold_sync = True                                                  # live only: no sync may bring it
        batches_before = teacher.live_batches
        reply = student.connect(node_t)
        checks.require("tls: the student joins over tls+tcp:// and gets a snapshot showing the teacher",
                       reply.WhichOneof("body") == "join_response" and (student.row("teach") or {}).get("online") is True,
                       show(reply))
        live = teacher.wait_for(lambda: (teacher.row("stu-1") or {}).get("online") is True)
        teacher.hold_sync = False
        checks.check(f"tls: the teacher sees the student's join live on its SUB socket dialed to {teacher.sub_address.split('/')[0]}// "
                     "(T's room stream, or its publish address if the hello had no room_streams)",
                     live and teacher.live_batches > batches_before,
                     f"{teacher.live_batches - batches_before} live batches")

        student.pump()
        student.hold_sync = True
        batches_before = student.live_batches
        reply, _ = teacher.write("set_stage", target="stu-1", on=True)
        checks.require("tls: the teacher puts the student on stage over tls+tcp://: ACCEPTED with a dot from T",
                       accepted(reply) and reply.write_ack.dot.origin == node_id, show(reply))
        dot = reply.write_ack.dot
        live = student.wait_for(lambda: student.seen_dot(dot) and (student.row("stu-1") or {}).get("stage") is True)
        student.hold_sync = False
        checks.check(f"tls: the student receives it as a live delta on its {student.sub_address.split('/')[0]}// SUB socket "
                     "(syncs held) and is on stage",
                     live and student.live_batches > batches_before,
                     f"{student.live_batches - batches_before} live batches; {student.row('stu-1')}")

        print("== tls: refused connections")
        wrong, wrong_detail = hello_over(node_t, tls_config(args.tls_wrong_ca))
        good, good_detail = hello_over(node_t, right)
        checks.check("tls: a client verifying against another CA gets no reply from T; with T's CA the same hello is answered",
                     wrong is None and good is not None and good.node == node_id,
                     f"other CA: {wrong_detail}; T's CA: {good_detail}")
        plain_t = "tcp://" + node_t[len("tls+tcp://"):]
        plain, plain_detail = hello_over(plain_t, None)
        checks.check("tls: a plain tcp:// REQ to T's TLS port gets no reply",
                     plain is None and good is not None, f"{plain_t}: {plain_detail}")
        if args.node_a.startswith("tcp://"):
            tls_a = "tls+tcp://" + args.node_a[len("tcp://"):]
            over_tls, tls_detail = hello_over(tls_a, right)
            over_plain, plain_a_detail = hello_over(args.node_a, None)
            checks.check("tls: a tls+tcp:// REQ to plain node A's port gets no reply (the handshake fails); "
                         "plain tcp:// there is answered",
                         over_tls is None and over_plain is not None,
                         f"{tls_a}: {tls_detail}; {args.node_a}: {plain_a_detail}")

        for peer in (student, teacher):
            reply, _ = peer.write("leave_session", target=peer.user, session=peer.session)
            checks.check(f"tls: {peer.label} leaves over tls+tcp://: ACCEPTED", accepted(reply), show(reply))
    finally:
        teacher.close_sockets()
        student.close_sockets()


def start_node(binary, name, seed=None, reward_window=1.0, extra=()):
    """Starts `homeroom node` (no data directory: a new replica id at each start); returns (process, listen)."""
    command = [binary, "node", "--name", name, "--listen", "tcp://127.0.0.1:0", "--publish", "tcp://127.0.0.1:0",
               "--heartbeat-ms", "100", "--suspect-ms", "500", "--down-ms", "1500", "--session-timeout-ms", "2000",
               "--reward-window-ms", str(int(reward_window * 1000)), "--max-clock-drift-ms", "1000",
               "--log-level", "warning", *extra]
    if seed:
        command += ["--seed", seed]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    try:
        return process, json.loads(line)["listen"]
    except (ValueError, KeyError):
        process.kill()
        process.wait()
        raise SetupError(f"node {name} printed no ready line: {line!r}")


def stop_node(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_spent_fences(args, hw, pynng, checks):
    """Spent fences ("Deriving locks"): counting grants one at a time never gets a lock near 2^62, a peer's
    fence does. On a node of its own (L), this client stands in for a peer node: a node hello whose digest
    shows writes L lacks, then the sync_response L asks for, a patch with two released locks, "spent" (grant
    count 2^38 - 1) and "last" (2^38 - 2). The teacher's acquire of "spent" is refused limit-reached; of
    "last" it gets the last fence, below 2^62, as lock_fence() computes; its renewal keeps that fence and is
    taken (a renewal needs no new fence), and once it is released nobody gets "last" again."""
    E, C, S = hw.envelope_pb2, hw.common_pb2, hw.state_pb2
    room_id = f"fences-{os.getpid()}-{int(time.time())}"
    print(f"== spent fences (room {room_id}): a stand-in peer brings fences near 2^62")
    show, accepted = (lambda reply: describe_reply(E, reply)), (lambda reply: is_accepted(E, reply))
    node, listen = start_node(args.homeroom_bin, f"fences-{os.getpid()}", reward_window=args.reward_window)
    stand_in, teacher, rep = 0x5EED_F00D, None, None                     # an unstructured replica id of our own
    try:
        teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", "teacher@L")
        teacher.connect(listen)
        count = hw.MAX_FENCE >> hw.GRANTER_BITS                           # 2^38
        spent, last = ((count - 1) << hw.GRANTER_BITS) | 1, ((count - 2) << hw.GRANTER_BITS) | 1
        clock = (time.time_ns() // 1_000_000 - 1000) << 16
        patch = S.RoomPatch(room_id=room_id, replicas=[stand_in], strings=["ghost"])
        for i, (name, fence) in enumerate((("spent", spent), ("last", last))):
            record = patch.locks.add(name=name, granted=True, holder=0, fence=fence, ttl_seconds=10, ended_fence=fence)
            record.grant_stamp.clock, record.grant_stamp.replica, record.grant_stamp.sequence = clock, 0, 2 * i + 1
            record.ended_stamp.clock, record.ended_stamp.replica, record.ended_stamp.sequence = clock, 0, 2 * i + 2
        patch.seen.origins.add(origin=stand_in, contiguous=4)
        hw.check_patch(patch)                                             # fences up to 2^62: a decoder takes them
        rep = pynng.Rep0(listen="tcp://127.0.0.1:0", recv_max_size=0)
        here = "tcp://" + str(rep.listeners[0].local_address)
        hello = E.Envelope(protocol_version=1, sender=stand_in, sequence=1)
        hello.heartbeat.node, hello.heartbeat.incarnation, hello.heartbeat.address = stand_in, 1, here
        hello.heartbeat.sent_at_ms, hello.heartbeat.node_name = time.time_ns() // 1_000_000, "stand-in"
        hello.heartbeat.rooms.add(room_id=room_id).seen.CopyFrom(patch.seen)
        answered = teacher.call(hello).WhichOneof("body") == "heartbeat"
        pulled, deadline = False, time.monotonic() + 5
        while not pulled and time.monotonic() < deadline:                 # answer L's requests until it pulled
            rep.recv_timeout = 500
            try:
                request = E.Envelope.FromString(rep.recv())
            except pynng.Timeout:
                continue
            reply = E.Envelope(protocol_version=1, room_id=request.room_id, sender=stand_in, sequence=2)
            if request.WhichOneof("body") == "sync_request" and request.room_id == room_id:
                reply.sync_response.patch.CopyFrom(patch)
                reply.sync_response.seen.CopyFrom(patch.seen)
                pulled = True
            else:
                reply.error.code = "unsupported"
            rep.send(reply.SerializeToString())
        arrived = teacher.wait_for(lambda: {n: teacher.room.lock_status(n, 0)["fence"] for n in teacher.room.locks}
                                   == {"spent": spent, "last": last}, seconds=5)
        checks.require("spent fences: L takes a stand-in peer's hello and pulls its patch (locks spent and last, released, "
                       "fences near 2^62); the teacher's replica has both",
                       answered and pulled and arrived, f"hello answered {answered}, pulled {pulled}, locks {teacher.room.locks}")
        reply, _ = teacher.write("acquire_lock", name="spent", ttl_seconds=30)
        reply2, _ = teacher.write("acquire_lock", name="last", ttl_seconds=30)
        granted = reply2.write_ack.fence if accepted(reply2) else 0
        reply3, _ = teacher.write("acquire_lock", name="last", ttl_seconds=30)
        renewed = reply3.write_ack.fence if accepted(reply3) else 0
        reply4, _ = teacher.write("release_lock", name="last", fence=granted)
        reply5, _ = teacher.write("acquire_lock", name="last", ttl_seconds=30)
        checks.check("spent fences: an acquire of spent (grant count 2^38 - 1) is refused limit-reached; one of last "
                     "(2^38 - 2) is ACCEPTED with the last fence, below 2^62, as lock_fence() computes; that lock is then "
                     "spent too (fences_spent()), yet its holder's renewal is ACCEPTED with the same fence; once released "
                     "(ACCEPTED), a new acquire of last is refused limit-reached",
                     rejected_code(E, reply, "limit-reached") and hw.fences_spent(spent) and not hw.fences_spent(last)
                     and granted == hw.lock_fence(last, teacher.node.node) and granted < hw.MAX_FENCE
                     and hw.fences_spent(granted) and accepted(reply3) and renewed == granted
                     and accepted(reply4) and rejected_code(E, reply5, "limit-reached"),
                     f"{show(reply)} / {show(reply2)} fence {granted} / {show(reply3)} fence {renewed} / {show(reply4)} / "
                     f"{show(reply5)}")
    finally:
        if rep is not None:
            rep.close()
        if teacher is not None:
            teacher.close_sockets()
        stop_node(node)


def rejected_code(E, reply, code):
    return (reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == E.WRITE_STATUS_REJECTED
            and reply.write_ack.error_code == code)


MASK64 = (1 << 64) - 1


def placement_mix(h, w):
    """splitmix64's finaliser of (h XOR w) + 0x9E3779B97F4A7C15 (docs/PROTOCOL.md, "Heartbeats")."""
    z = ((h ^ w) + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def placement_owners(room_id, names, replicas):
    """The room's owners, best first ("Placement"): mix(room_hash, fnv1a64(name)), highest first."""
    data = room_id.encode()
    h = placement_mix(0x686F6D65726F6F6D, len(data))
    for start in range(0, len(data), 8):
        h = placement_mix(h, int.from_bytes(data[start:start + 8], "big"))

    def fnv1a64(name):
        f = 0xCBF29CE484222325
        for byte in name.encode():
            f = ((f ^ byte) * 0x100000001B3) & MASK64
        return f
    return sorted(names, key=lambda name: (placement_mix(h, fnv1a64(name)), name), reverse=True)[:replicas]


def run_placement(args, hw, pynng, checks):
    """Placement ("Placement"): three nodes started with --replicas 2. A join through a node that does not
    keep the room is answered not-owner, naming the owners this client computes from the spelled-out score;
    the client follows it, joins and writes there; both owners hold the write and the third node keeps
    sending clients on (not-owner to a digest)."""
    C = hw.common_pb2
    E = hw.envelope_pb2
    tag = f"{os.getpid()}-{int(time.time())}"
    names = [f"place-{i}-{tag}" for i in range(3)]
    print("== placement: three nodes with --replicas 2")
    nodes, listen = [], {}
    teacher = None
    try:
        for name in names:
            process, address = start_node(args.homeroom_bin, name, seed=listen.get(names[0]),
                                          reward_window=args.reward_window, extra=("--replicas", "2"))
            nodes.append(process)
            listen[name] = address
        probe = Peer(hw, pynng, "placement-probe", "probe", C.ROLE_OBSERVER, "Probe", "probe")

        def meshed():
            for name in names:
                sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
                try:
                    sock.dial(listen[name], block=True)
                    heard = probe.hello(sock)
                finally:
                    sock.close()
                if sorted(p.node_name for p in heard.peers if p.status == E.PEER_STATUS_ALIVE) != sorted(set(names) - {name}):
                    return False
            return True
        deadline = time.monotonic() + 10
        while not meshed() and time.monotonic() < deadline:
            time.sleep(0.2)
        checks.require("placement: the three nodes know each other by name", meshed())
        # A room node 0 does not keep, by this client's own computation.
        room_id = next(f"placed-{tag}-{i}" for i in range(100) if names[0] not in placement_owners(f"placed-{tag}-{i}", names, 2))
        owners = placement_owners(room_id, names, 2)
        teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", "teacher@place-0")
        reply = teacher.connect(listen[names[0]])
        refusal = reply.error if reply.WhichOneof("body") == "error" else None
        checks.require("placement: a join at a node that does not keep the room is answered not-owner",
                       refusal is not None and refusal.code == "not-owner", describe_reply(E, reply))
        named = [owner.node_name for owner in refusal.owners]
        checks.check("placement: not-owner names the owners, best first, as the spelled-out score ranks them",
                     named == owners, f"named {named}, computed {owners}")
        checks.check("placement: each owner comes with its REP address",
                     [owner.address for owner in refusal.owners] == [listen[name] for name in owners],
                     str([owner.address for owner in refusal.owners]))
        reply = teacher.connect(refusal.owners[0].address)
        checks.require("placement: the join at the first owner is answered join_response",
                       reply.WhichOneof("body") == "join_response", describe_reply(E, reply))
        written, _ = teacher.write("set_room_name", name="Placed lesson")
        checks.require("placement: a write at the owner is ACCEPTED", is_accepted(E, written), describe_reply(E, written))
        dot = written.write_ack.dot

        def digest(address):
            sock = pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
            try:
                sock.dial(address, block=True)
                return teacher.request(lambda e: e.digest.SetInParent(), sock=sock)
            finally:
                sock.close()

        def on_both_owners():
            return all(hw.VersionVector.from_proto(digest(listen[name]).digest.seen).contains(dot.origin, dot.sequence)
                       for name in owners)
        deadline = time.monotonic() + 5
        while not on_both_owners() and time.monotonic() < deadline:
            time.sleep(0.1)
        checks.check("placement: both owners hold the write", on_both_owners())
        elsewhere = digest(listen[names[0]])
        checks.check("placement: the third node answers a digest of the room not-owner",
                     elsewhere.WhichOneof("body") == "error" and elsewhere.error.code == "not-owner", describe_reply(E, elsewhere))
        teacher.write("leave_session", target=teacher.user, session=teacher.session)
    finally:
        if teacher is not None:
            teacher.close_sockets()
        for process in nodes:
            stop_node(process)


def run_retire(args, hw, pynng, checks):
    """Replica ids (docs/PROTOCOL.md): a node restarted without a store takes a new id; once the cluster
    holds the old id's writes, the new one retires it with retire_predecessors. This client's replica must
    drop the old id as the nodes do and keep every reward counted once."""
    C = hw.common_pb2
    room_id = f"retire-{os.getpid()}-{int(time.time())}"
    print(f"== retirement (room {room_id}): node R2 restarted without a store")
    nodes = []
    student = Peer(hw, pynng, room_id, "stu-1", C.ROLE_STUDENT, "Ada", "student@R1")
    teacher = None
    try:
        r1, listen_r1 = start_node(args.homeroom_bin, f"ret-a-{os.getpid()}", reward_window=args.reward_window)
        nodes.append(r1)
        r2, listen_r2 = start_node(args.homeroom_bin, f"ret-b-{os.getpid()}", seed=listen_r1, reward_window=args.reward_window)
        nodes.append(r2)
        student.connect(listen_r1)
        expected = 0
        old_ids = []
        for store in range(2):
            teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", f"teacher@R2#{store + 1}")
            teacher.connect(listen_r2)
            old_ids.append(teacher.node.node)
            teacher.wait_for(lambda: teacher.row("stu-1") is not None, seconds=5)
            for _ in range(3):
                reply, _ = teacher.write("reward", target="stu-1", amount=2)
                if is_accepted(hw.envelope_pb2, reply):
                    expected += 2
            teacher.close_sockets()
            if store == 0:
                stop_node(r2)
                r2, listen_r2 = start_node(args.homeroom_bin, f"ret-b-{os.getpid()}", seed=listen_r1, reward_window=args.reward_window)
                nodes.append(r2)
        old, new = old_ids
        checks.check("the restarted node has a new structured replica id of the same name, a later generation",
                     hw.structured_parts(old) is not None and hw.structured_parts(new) is not None
                     and hw.structured_parts(old)[0] == hw.structured_parts(new)[0] and hw.structured_parts(old)[1] < hw.structured_parts(new)[1],
                     f"{old:x} then {new:x}")

        def left_of_old(room):
            return [u for u, user in room.users.items()
                    if any(room.is_retired(s["host"]) for s in user.sessions.values())
                    or any(room.is_retired(o) for o in list(user.reward_floors) + list(user.session_floors))
                    or any(room.is_retired(r[1][1]) for r in user.rewards.values())]

        def retired():
            total = next((r["rewards"] for r in student.room.roster() if r["user"] == "stu-1"), None)
            return student.room.is_retired(old) and not left_of_old(student.room) and total == expected
        checks.check("this client's replica takes the retirement: the old id is retired, nothing of it is left, every reward is still counted",
                     student.wait_for(retired, seconds=25),
                     f"retired {student.room.retired}, left in {left_of_old(student.room)}, "
                     f"rewards {next((r['rewards'] for r in student.room.roster() if r['user'] == 'stu-1'), None)} of {expected}")
        fresh = Peer(hw, pynng, room_id, "late", C.ROLE_OBSERVER, "Late", "observer@R1")
        try:
            fresh.connect(listen_r1)
            snapshot_total = next((r["rewards"] for r in fresh.room.roster() if r["user"] == "stu-1"), None)
            leftovers = left_of_old(fresh.room)
            checks.check("a join after the retirement gets a snapshot with nothing of the old id and the same total",
                         snapshot_total == expected and fresh.room.is_retired(old) and not leftovers,
                         f"total {snapshot_total} of {expected}, origins {[f'{o:x}' for o in fresh.room.seen.origins]}, leftovers {leftovers}")
        finally:
            fresh.close_sockets()
    finally:
        student.close_sockets()
        if teacher is not None:
            teacher.close_sockets()
        for process in nodes:
            stop_node(process)


def main():
    # A hang shows where it is: `timeout` (Tests/interop/run.sh) sends SIGTERM, and every thread's stack is
    # printed before the default action ends the process.
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--node-a", required=True, help="listen (REP) address of node A")
    parser.add_argument("--node-b", required=True, help="listen (REP) address of node B")
    parser.add_argument("--room", help="room id (default: a fresh one)")
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "PROTOCOL.md"))
    parser.add_argument("--proto", default=os.path.join(ROOT, "Proto"))
    parser.add_argument("--node-a-pid", type=int, help="node A's process id: enables the anti-entropy check, "
                        "which cuts node A from the cluster for 0.3 s with its SIGUSR1/SIGUSR2 fault hooks")
    parser.add_argument("--session-timeout", type=float, default=10.0,
                        help="the nodes' --session-timeout-ms, in seconds (the lease check waits for it)")
    parser.add_argument("--reward-window", type=float, default=60.0,
                        help="the nodes' --reward-window-ms, in seconds (the reward-fold check waits for folds; "
                        "Tests/interop/run.sh starts the nodes with 1 s)")
    closed = parser.add_argument_group("closed room", "nodes started with --token-key and --cluster-key "
                                       "(Tests/interop/run.sh starts two: C, and D seeded from C)")
    closed.add_argument("--closed-node", help="listen address of node C: enables the closed-room phase")
    closed.add_argument("--closed-node-b", help="listen address of node D, in C's cluster")
    closed.add_argument("--closed-room", help="the room the tokens name")
    closed.add_argument("--teacher-token", help="token for user teach, role teacher")
    closed.add_argument("--student-token", help="token for user stu-1, role student")
    closed.add_argument("--student2-token", help="token for user stu-2, role student")
    closed.add_argument("--wrong-room-token", help="token for user stu-1, role student, in another room")
    closed.add_argument("--cluster-key", help="the nodes' cluster.key: checks the HRX1 node-to-node messages")
    tls = parser.add_argument_group("TLS", "a node on tls+tcp:// (Tests/interop/run.sh starts one: T, with "
                                    "certificates from Deploy/tls-certs.sh)")
    tls.add_argument("--tls-node", help="tls+tcp:// listen address of node T: enables the TLS phase")
    tls.add_argument("--tls-ca", help="the CA (PEM) that signed T's certificate")
    tls.add_argument("--tls-wrong-ca", help="another CA (PEM): a client verifying against it must get no reply")
    tls.add_argument("--tls-server-name", default="localhost",
                     help="the DNS name T's certificate lists, checked by mbedtls (default: localhost)")
    parser.add_argument("--homeroom-bin", help="the homeroom binary: enables the checks against `homeroom carousel`, "
                        "`lock` and `group`, the spent-fences phase (a node of its own, fed by a stand-in peer) and "
                        "the retirement phase, which starts two nodes of its own and restarts one without a store")
    parser.add_argument("--result", help="write {passed, failed, failures} as JSON to this file")
    args = parser.parse_args()
    if args.closed_node and not (args.closed_room and args.teacher_token and args.student_token and args.student2_token):
        parser.error("--closed-node needs --closed-room, --teacher-token, --student-token and --student2-token")
    if args.tls_node and not (args.tls_node.startswith("tls+tcp://") and args.tls_ca and args.tls_wrong_ca):
        parser.error("--tls-node needs a tls+tcp:// address, --tls-ca and --tls-wrong-ca")

    checks = Checks()
    started = time.monotonic()
    gen_dir = tempfile.mkdtemp(prefix="homeroom-interop-gen-")
    error = None
    try:
        hw = load_protocol(args.doc, args.proto, gen_dir)
        import pynng

        def overtime(signum, frame):
            raise TimeoutError(f"the run took more than {deadline:.0f} s")
        deadline = (RUN_DEADLINE_SECONDS + GROUPS_DEADLINE_SECONDS + fold_wait(args.reward_window)
                    + (CLOSED_DEADLINE_SECONDS if args.closed_node else 0)
                    + (TLS_DEADLINE_SECONDS if args.tls_node else 0)
                    + (RETIRE_DEADLINE_SECONDS + FENCES_DEADLINE_SECONDS + PLACEMENT_DEADLINE_SECONDS if args.homeroom_bin else 0))
        signal.signal(signal.SIGALRM, overtime)
        signal.alarm(int(deadline) + 1)
        try:
            aborted = None
            # TLS last: when pynng wedges closing its TLS sockets (close_tls_socket), nothing runs after it.
            phases = [run, run_groups] + ([run_closed] if args.closed_node else []) \
                + ([run_spent_fences, run_retire, run_placement] if args.homeroom_bin else []) + ([run_tls] if args.tls_node else [])
            for phase in phases:
                try:
                    phase(args, hw, pynng, checks)
                except Abort as e:                                                # the later phases still run
                    aborted = aborted or e
            if aborted is not None:
                raise aborted
        finally:
            signal.alarm(0)
    except SetupError as e:
        print(f"interop client: setup failed: {e}", file=sys.stderr)
        return 2
    except Abort as e:
        error = f"stopped after a failed check that later steps need: {e}"
    except (Unavailable, TimeoutError) as e:
        error = f"a node did not answer in time: {e}"
        checks.failed += 1
        checks.failures.append(str(e))
    except Exception as e:                                                        # noqa: BLE001 - report, then fail
        import traceback
        traceback.print_exc()
        error = f"unexpected {type(e).__name__}: {e}"
        checks.failed += 1
        checks.failures.append(error)
    finally:
        shutil.rmtree(gen_dir, ignore_errors=True)
    if error:
        print(f"interop client: {error}", file=sys.stderr)
    print(f"client: {checks.passed} checks passed, {checks.failed} failed in {time.monotonic() - started:.1f} s")
    if args.result:
        with open(args.result, "w") as f:
            json.dump({"passed": checks.passed, "failed": checks.failed, "failures": checks.failures}, f)
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)                   # no wait on a socket close_tls_socket() left to the exit
