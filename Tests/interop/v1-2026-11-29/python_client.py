#!/usr/bin/env python3
"""Homeroom interop client, written from docs/PROTOCOL.md alone.

Joins one room through two nodes (a teacher through node A, a student through
node B), follows live deltas, sends acknowledged writes, checks refusals and
error codes, repairs a simulated loss, resumes through the other node, and
checks that every view converges on the roster it expects.

The reference module `homeroom_wire` is loaded from the ```python block of the
section "A Python client" in docs/PROTOCOL.md, so that code is tested too; the
protobuf classes are generated with protoc into a temporary directory.

    python_client.py --node-a tcp://127.0.0.1:7400 --node-b tcp://127.0.0.1:7410

Exit status: 0 when every check passed, 1 when one failed, 2 on a usage or
setup error. Every wait is bounded; the whole run takes a few seconds.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Budgets (docs/PROTOCOL.md, "Timeouts and retries").
REQUEST_TIMEOUT_MS = 1000
JOIN_TIMEOUT_MS = 3000
WAIT_SECONDS = 3.0              # for a change to show up on a SUB socket
PERIODIC_SYNC_SECONDS = 1.0
MIN_SYNC_INTERVAL = 0.1
RUN_DEADLINE_SECONDS = 25.0


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


class Peer:
    """One user in one room through one node: Flows 1 to 7 of docs/PROTOCOL.md."""

    def __init__(self, hw, pynng, room_id, user, role, name, label):
        self.hw, self.pynng = hw, pynng
        self.env = hw.envelope_pb2
        self.room = hw.Room(room_id)
        self.user, self.role, self.name, self.label = user, role, name, label
        self.req = self.sub = None
        self.node = None                # hello reply (Heartbeat)
        self.session = None
        self.connections = 0
        self.counter = 0
        self.request_id = 0
        self.last_sync = 0.0
        self.sync_wanted = False
        self.drop_ops = set()           # simulated SUB loss: drop batches holding these operations
        self.dropped = 0
        self.repairs = []               # why each sync after a possible loss was made
        self.hold_sync = False          # test hook: no sync until released
        self.topic_patches = 0
        self.lease = False              # name the session in syncs (Flow 5, "Session leases")

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

    def hello(self, sock):
        reply = self.request(lambda e: e.heartbeat.SetInParent(), room=False, sock=sock)
        if reply.WhichOneof("body") != "heartbeat":
            raise Unavailable(f"hello answered with {reply.WhichOneof('body')}")
        return reply.heartbeat

    # -- connecting (Flows 1 to 3, and 7)

    def connect(self, address, resume=False):
        """Hello, subscribe, join. Returns the join reply envelope."""
        self.close_sockets()
        self.req = self.pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS,
                                   reconnect_time_min=50, reconnect_time_max=500)
        self.req.dial(address, block=True)
        self.node = self.hello(self.req)                                         # Flow 1
        self.sub = self.pynng.Sub0(recv_max_size=0, recv_buffer_size=8192, recv_timeout=20,
                                   reconnect_time_min=50, reconnect_time_max=500)
        self.sub.subscribe(self.room.id.encode() + b"\x00")                      # Flow 2: before the join
        self.sub.subscribe(self.private_topic())                                  # ... and the private stream (Flow 8)
        self.sub.dial(self.node.publish_address, block=True)
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
            if sock is not None:
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
        if (self.sync_wanted and now - self.last_sync >= MIN_SYNC_INTERVAL) or now - self.last_sync >= PERIODIC_SYNC_SECONDS:
            self.sync()

    def receive(self, message):
        if message.startswith(self.private_topic()):                              # our private stream: peer messages
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
        if response.HasField("patch"):
            self.room.merge_patch(response.patch)                                 # computed against our seen: adopt
        for batch in response.batches:
            self.room.apply_batch(batch)
        self.last_sync = time.monotonic()
        self.sync_wanted = False

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

    def write(self, op, target=None, counter=None, role=None, author=None, via=None, request_id=None, edit=None, **fields):
        """Sends an acknowledged write; returns (reply envelope, counter). `via`: another node's listen address;
        `edit(body)` sets what keyword fields cannot (sub-messages, repeated fields)."""
        counter = counter if counter is not None else self.next_counter()
        if request_id is None:
            self.request_id += 1
            request_id = self.request_id
        env = self.hw.write_request(self.room.id, request_id, author or self.user, role or self.role,
                                    counter, op, target=target, **fields)
        if edit is not None:
            edit(getattr(env.write_request.write, op))
        if via is None:
            return self.call(env), counter
        sock = self.pynng.Req0(recv_max_size=0, send_timeout=REQUEST_TIMEOUT_MS)
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
                  tuple(sorted(u.rewards.items())), tuple(sorted(u.properties.items())), u.chat_muted,
                  tuple(sorted(u.presence.items())))
        empty = (u.name[1] == u.role[1] == u.kicked == (0, 0, 0) and u.banned is None and not u.sessions
                 and not u.rewards and not u.properties and not u.presence and u.chat_muted[1] == (0, 0, 0)
                 and all(stamp == (0, 0, 0) for _, stamp in u.flags.values()))
        if not empty:
            users[uid] = record
    messages = tuple(sorted((k, tuple(sorted(m.items()))) for k, m in room.messages.items()))
    return (room.name, room.type, room.stage_limit, room.hand_limit, room.schedule, room.class_state, room.mute_all,
            tuple(sorted(room.dead.items())), tuple(sorted(room.properties.items())), tuple(sorted(users.items())),
            room.chat_muted, room.history_limit, room.floor, messages)


def run(args, hw, pynng, checks):
    E, C = hw.envelope_pb2, hw.common_pb2
    ACCEPTED, REJECTED = E.WRITE_STATUS_ACCEPTED, E.WRITE_STATUS_REJECTED
    room_id = args.room or f"interop-{os.getpid()}-{int(time.time())}"
    print(f"room {room_id}; node A {args.node_a}; node B {args.node_b}")

    def show(reply):
        kind = reply.WhichOneof("body")
        if kind == "write_ack":
            a = reply.write_ack
            return f"{E.WriteStatus.Name(a.status)} {a.error_code} {a.message}".strip()
        if kind == "error":
            return f"error {reply.error.code}: {reply.error.message}"
        return kind or "no body"

    def accepted(reply):
        return reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == ACCEPTED

    def rejected(reply, code):
        return (reply.WhichOneof("body") == "write_ack" and reply.write_ack.status == REJECTED
                and reply.write_ack.error_code == code)

    teacher = Peer(hw, pynng, room_id, "teach", C.ROLE_TEACHER, "Grace", "teacher@A")
    student = Peer(hw, pynng, room_id, "stu-1", C.ROLE_STUDENT, "Ada", "student@B")
    try:
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
        print("== rewards")
        reply, first_counter = teacher.write("reward", target="stu-1", amount=2)
        ok1 = accepted(reply)
        reply2, _ = teacher.write("reward", target="stu-1", amount=3, via=args.node_b)
        ok2 = accepted(reply2) and reply2.write_ack.dot.origin == node_b
        reply3, _ = teacher.write("reward", target="stu-1", amount=2, counter=first_counter, via=args.node_b, request_id=teacher.request_id - 1)
        ok3 = reply3.WhichOneof("body") == "write_ack" and reply3.write_ack.status in (ACCEPTED, E.WRITE_STATUS_DUPLICATE)
        checks.check("rewards of 2 (through A) and 3 (through B) are ACCEPTED, and so is a retry of the first through B",
                     ok1 and ok2 and ok3, f"{show(reply)} / {show(reply2)} / {show(reply3)}")
        checks.check("both views count 5 rewards: the retried one counts once",
                     teacher.wait_for(lambda: (teacher.row("stu-1") or {}).get("rewards") == 5)
                     and student.wait_for(lambda: (student.row("stu-1") or {}).get("rewards") == 5),
                     f"teacher sees {(teacher.row('stu-1') or {}).get('rewards')}, student sees {(student.row('stu-1') or {}).get('rewards')}")

        # 11b: messaging (Flow 8): a room message, a peer message across nodes, a retried send,
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
        reply, _ = teacher.write("set_chat_muted", target="stu-1", muted=True)
        muted_ok = accepted(reply) and student.wait_for(lambda: student.room.users["stu-1"].chat_muted[0] is True)
        reply2, _ = student.write("send_message", type="chat", payload=b"let me talk")
        reply3, _ = teacher.write("set_chat_muted", target="stu-1", muted=False)
        checks.check("the teacher mutes the student: its message is refused with muted; unmuted after",
                     muted_ok and rejected(reply2, "muted") and accepted(reply3), show(reply2))

        def presence(e):
            item = e.items.add()
            item.key, item.value = "mood", b"curious"
        reply, _ = student.write("set_presence_state", target="stu-1", session=student.session, edit=presence)
        checks.check("student sets presence state through its session: the teacher sees it",
                     accepted(reply) and teacher.wait_for(lambda: teacher.room.presence_state("stu-1") == {"mood": b"curious"}),
                     show(reply))

        # 12: error codes.
        print("== error replies")
        reply, _ = student.write("set_hand", target="stu-1", raised=True, role=C.ROLE_TEACHER)
        checks.check("a write with another role than the joined one: role-mismatch", rejected(reply, "role-mismatch"), show(reply))
        reply, _ = teacher.write("set_hand", raised=True, author="ghost", role=C.ROLE_STUDENT)
        checks.check("a write by a user who never joined: not-joined", rejected(reply, "not-joined"), show(reply))
        reply, _ = teacher.write("set_board", target="nobody", granted=True)
        checks.check("a write about a user who never joined: user-not-found", rejected(reply, "user-not-found"), show(reply))
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

        # 14-15: convergence and the final roster.
        print("== convergence")
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
                          camera="live", mic="device-off", rewards=5)
        expected_t = dict(user="teach", name="Grace", role="teacher", online=True, stage=False, auth=False,
                          camera="inoperable", mic="inoperable", rewards=0)
        checks.check("final roster: student on stage, whiteboard granted, camera live, mic device-off, 5 rewards",
                     s == expected_s and s.get("camera") in states and s.get("mic") in states, str(s))
        checks.check("final roster: teacher online, off stage, streams inoperable, no rewards", t == expected_t, str(t))

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


def main():
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
    parser.add_argument("--result", help="write {passed, failed, failures} as JSON to this file")
    args = parser.parse_args()

    checks = Checks()
    started = time.monotonic()
    gen_dir = tempfile.mkdtemp(prefix="homeroom-interop-gen-")
    error = None
    try:
        hw = load_protocol(args.doc, args.proto, gen_dir)
        import pynng

        def overtime(signum, frame):
            raise TimeoutError(f"the run took more than {RUN_DEADLINE_SECONDS:.0f} s")
        signal.signal(signal.SIGALRM, overtime)
        signal.alarm(int(RUN_DEADLINE_SECONDS) + 1)
        try:
            run(args, hw, pynng, checks)
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
    sys.exit(main())
