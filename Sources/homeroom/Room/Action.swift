import HomeroomCore
import HomeroomContext
import HomeroomNode
import HomeroomSupport

/// Whose properties a `prop` action reads or writes.
enum PropertyOwner: Equatable {
    case room
    case user(UserID)
}

/// Everything the contexts offer, as one grammar shared by `homeroom join` (a line)
/// and the one-shot subcommands (`homeroom stage add bob --room ...`).
enum Action: Equatable {
    case stage(on: Bool, users: [UserID])
    case stageClear
    case board(UserID, granted: Bool)
    case device(Device, on: Bool)
    case privilege(Device, UserID, allowed: Bool)
    case muteAll
    /// Invites a user to the stage for `seconds` (teacher, assistant).
    case invite(UserID, seconds: UInt32)
    /// The local user's answer to its invitation to the stage.
    case answerInvitation(accept: Bool)
    /// The local user's invitation, and every one still pending.
    case invitationStatus
    /// The room's camera or microphone mute, for every student (teacher, assistant).
    case roomMute(Device, muted: Bool)
    case carouselStart(intervalSeconds: UInt32, range: Carousel.Range, order: Carousel.Order)
    case carouselStop
    case carouselStatus
    case reward([UserID], amount: Int)
    case kick(UserID)
    case ban(UserID)
    case hand(up: Bool)
    case lowerHand(UserID)
    /// Hand raising on (with auto-stage or not) or off, for the room (teacher, assistant).
    case handRaising(allowed: Bool, autoStage: Bool)
    case classStart
    case classEnd
    case schedule(minutes: Int, startInMinutes: Int?)
    case roomName(String)
    case roomType(RoomType)
    case stageLimit(Int)
    case handLimit(Int)
    case propertySet(PropertyOwner, key: String, value: String, ifRevision: UInt64?, ifSetRevision: UInt64? = nil, fence: LockFence? = nil)
    case propertyUnset(PropertyOwner, key: String, ifRevision: UInt64?, ifSetRevision: UInt64? = nil, fence: LockFence? = nil)
    // Locks
    case lockAcquire(String, ttlSeconds: UInt32, waitSeconds: UInt32)
    case lockRelease(String)
    case lockRevoke(String)
    case lockList
    // Breakout groups
    case groupList
    case groupCreate(String, name: String?)
    case groupRandom(Int)
    case groupRemove(String)
    case groupMove([UserID], to: String?)
    case groupEnd
    case groupBroadcast(String)
    case propertyList(PropertyOwner)
    case propertyGet(PropertyOwner, key: String)
    case rename(String)
    // Messaging
    case send(text: String, type: String)
    case whisper(UserID, text: String, type: String)
    case history(limit: Int)
    case historyLimit(Int)
    case historyClear
    case presenceList
    case presenceSet(key: String, value: String?)
    case chatMute(UserID?, muted: Bool)

    /// The verbs, as subcommands and as the first word of a line.
    static let verbs = ["stage", "board", "camera", "mic", "mute-all", "carousel", "reward", "kick", "ban", "hand", "class", "schedule",
                        "room", "prop", "lock", "group", "name", "send", "whisper", "history", "presence", "mute", "unmute", "invitation"]

    /// The theme section whose component an action belongs to (a disabled component refuses it).
    var component: String? {
        switch self {
        case .stage, .stageClear, .invite: return "stage"
        case .hand, .lowerHand, .handRaising: return "hands"
        default: return nil
        }
    }

    /// Verbs acting on the local user only: their one-shot default role is student.
    static func actsOnSelf(_ words: [String]) -> Bool {
        guard let verb = words.first else { return false }
        switch verb {
        case "hand": return words.count == 2 && (words[1] == "up" || words[1] == "down")
        case "camera", "mic": return words.count == 2 && (words[1] == "on" || words[1] == "off")
        case "name", "send", "whisper", "invitation": return true
        case "presence": return words.count >= 2
        default: return false
        }
    }

    static let grammar = """
          stage add|remove <user>...     Put users on stage, or take them off (teacher, assistant).
          stage clear                    Take everyone off the stage and out of its waiting list.
          stage invite <user>            Invite a student to the stage (teacher, assistant) for --seconds <s>
                                           (5-600, default 30); unanswered by then, it times out.
          invitation                     Your invitation to the stage, and every one still pending.
          invitation accept|decline      Answer yours: accept puts you on stage (stage-full when no seat
                                           is free), decline leaves you off; no-invitation, invitation-
                                           expired or invitation-answered when there is nothing to answer.
          board grant|revoke <user>      Whiteboard authorization.
          camera on|off                  Your own camera (mic on|off: your microphone).
          camera allow|deny <user>       Let a user publish the camera, or stop it (mic allow|deny: the microphone).
          camera mute|unmute             Mute every student's camera (mic mute|unmute: microphone), room-wide
                                           (teacher, assistant): students cannot turn it on (device-muted),
                                           those on show as off; unmute lets them turn it on again.
          mute-all                       Turn off every microphone privilege granted so far.
          carousel                       The stage carousel: its settings, this turn, the next one.
          carousel start                 Rotate students on stage (teacher, assistant): --interval <s>
                                           (10-99, default 60), --range all|camera-on, --order join-order|random.
          carousel stop                  Stop it: the stage is again who was put on it.
          reward <user>... [<n>]         Add n rewards (1-1000, default 1; or --amount <n>) to each user.
          kick <user>                    Kick a user out once (they may join again).
          ban <user>                     Kick a user out for good.
          hand up|down                   Raise or lower your own hand.
          hand down <user>               Lower someone's hand (teacher, assistant).
          hand off                       Switch hand raising off (teacher, assistant): raises are refused
                                           (hand-raising-off), raised hands are lowered.
          hand on [--auto-stage]         Switch it on again; with --auto-stage a student's raise puts it
                                           on stage while a seat is free (the stage full: the hand stays up).
          class start|end                Start or end the class (it only moves forward).
          schedule <minutes> [in <minutes>]   The class length, and its start from now.
          room name <text>               Rename the room.
          room type <type>               one-to-one, small-classroom or lecture-hall.
          room stage-limit|hand-limit <n>
          prop room|me|<user>            List properties of the room, of you, or of a user, with revisions;
          prop <owner> get <key>           read one (revision, writer, cause),
          prop <owner> set <key> <value>   set one (value: the rest of the line),
          prop <owner> unset <key>         or delete one. With --if-revision <n>: only if the key
                                           is still at revision n (0: never written); with
                                           --if-set-revision <n>: only if the owner's whole set is
                                           still at set revision n; else revision-mismatch. With
                                           --fence <lock>:<n>: guarded by a lock you hold (see lock).
          lock                           The room's locks: holder, fence, TTL.
          lock acquire <name>            Take a lock, or renew yours: prints its fence. --ttl <s> (10-300,
                                           default 60): how long it outlives your presence; --wait <s>:
                                           wait that long for its holder to let go (else lock-held).
          lock release <name>            Let go of a lock you hold.
          lock revoke <name>             End whoever's grant (teacher, assistant).
          group                          Breakout groups: each one's members and room (<room>:<id>).
          group create <id> [<name>]     Create a group (teacher, assistant; id: a-z 0-9 - _, 16 at most).
          group random <n>               Create groups g1..gn and spread the online students over them.
          group move <user>... <id>|main Move users into a group, or back to the main room.
          group remove <id>              Remove one group (its members are back in the main room).
          group broadcast <text>         Send one message to every group's room.
          group end                      End every group: everyone is back in the main room.
          name <text>                    Your display name.
          send <text>                    Send a room message to everyone (--type <type>, default chat).
          whisper <user> <text>          Send a peer message to one user, wherever it is connected.
          history [<n>]                  The newest n messages you may see (default 20; --limit <n>).
          history limit <n>              Keep the newest n messages (1-10000; teacher, assistant).
          history clear                  Remove every message sent so far (teacher, assistant).
          presence                       Online users and their temporary state.
          presence set <key> <value>     Set your temporary state (gone when you leave); presence unset <key>.
          mute <user>|all                Mute a user's chat, or every student's (teacher, assistant);
          unmute <user>|all                and unmute (also: mute <user> --off).
        """

    /// Parses the words of one action; `local` is who "me" is.
    static func parse(_ input: [String], local: UserID) throws(ActionError) -> Action {
        var words = input
        func option(_ name: String, _ example: String) throws(ActionError) -> String? {
            guard let index = words.firstIndex(of: name) else { return nil }
            guard index + 1 < words.count else { throw ActionError("\(name) needs a value, as in: \(example)") }
            defer { words.removeSubrange(index...(index + 1)) }
            return words[index + 1]
        }
        var amount: Int?
        if let text = try option("--amount", "reward bob --amount 3") {
            guard let value = Int(text) else { throw ActionError("--amount needs a whole number, as in: reward bob --amount 3") }
            amount = value
        }
        var ifRevision: UInt64?
        if let text = try option("--if-revision", "prop room set topic fractions --if-revision 3") {
            guard let value = UInt64(text) else { throw ActionError("--if-revision needs a revision (0 or more), not '\(text)'") }
            ifRevision = value
        }
        var ifSetRevision: UInt64?
        if let text = try option("--if-set-revision", "prop room set topic fractions --if-set-revision 7") {
            guard let value = UInt64(text) else { throw ActionError("--if-set-revision needs a set revision (0 or more), not '\(text)'") }
            ifSetRevision = value
        }
        var fence: LockFence?
        if let text = try option("--fence", "prop room set grades done --fence grading:16777217") {
            guard let colon = text.lastIndex(of: ":"), let value = UInt64(text[text.index(after: colon)...]), value > 0,
                  colon != text.startIndex else {
                throw ActionError("--fence is <lock>:<fence>, as lock acquire printed it, not '\(text)'")
            }
            fence = LockFence(lock: String(text[..<colon]), fence: value)
        }
        let ttlText = try option("--ttl", "lock acquire grading --ttl 120")
        let waitText = try option("--wait", "lock acquire grading --wait 30")
        let intervalText = try option("--interval", "carousel start --interval 30")
        let rangeText = try option("--range", "carousel start --range camera-on")
        let orderText = try option("--order", "carousel start --order random")
        let messageType = try option("--type", "send --type poll yes") ?? "chat"
        let limitOption = try option("--limit", "history --limit 50")
        let secondsText = try option("--seconds", "stage invite bob --seconds 60")
        let autoStage = words.contains("--auto-stage")
        words.removeAll { $0 == "--auto-stage" }

        guard let verb = words.first else { throw ActionError("no action given") }
        let rest = Array(words.dropFirst())
        func users(_ from: ArraySlice<String>, _ example: String) throws(ActionError) -> [UserID] {
            guard !from.isEmpty else { throw ActionError("name a user, as in: \(example)") }
            return from.map { $0 == "me" ? local : $0 }
        }
        func one(_ from: ArraySlice<String>, _ example: String) throws(ActionError) -> UserID {
            let list = try users(from, example)
            guard list.count == 1 else { throw ActionError("name one user, as in: \(example)") }
            return list[0]
        }
        func number(_ text: String, _ range: ClosedRange<Int>, _ what: String) throws(ActionError) -> Int {
            guard let value = Int(text), range.contains(value) else {
                throw ActionError("\(what) is a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return value
        }

        switch verb {
        case "stage":
            switch rest.first {
            case "add", "on": return .stage(on: true, users: try users(rest.dropFirst(), "stage add bob"))
            case "remove", "off": return .stage(on: false, users: try users(rest.dropFirst(), "stage remove bob"))
            case "clear" where rest.count == 1: return .stageClear
            case "invite":
                let seconds = try secondsText.map { text throws(ActionError) in
                    UInt32(try number(text, Int(StageInvitation.durationRange.lowerBound)...Int(StageInvitation.durationRange.upperBound), "--seconds"))
                } ?? StageInvitation.defaultSeconds
                return .invite(try one(rest.dropFirst(), "stage invite bob"), seconds: seconds)
            default: throw ActionError("use: stage add <user>..., stage remove <user>..., stage clear or stage invite <user> [--seconds <s>]")
            }
        case "invitation":
            switch (rest.first, rest.count) {
            case (nil, _): return .invitationStatus
            case ("accept", 1): return .answerInvitation(accept: true)
            case ("decline", 1): return .answerInvitation(accept: false)
            default: throw ActionError("use: invitation, invitation accept or invitation decline")
            }
        case "board":
            switch rest.first {
            case "grant": return .board(try one(rest.dropFirst(), "board grant bob"), granted: true)
            case "revoke": return .board(try one(rest.dropFirst(), "board revoke bob"), granted: false)
            default: throw ActionError("use: board grant <user> or board revoke <user>")
            }
        case "camera", "mic":
            let device: Device = verb == "camera" ? .camera : .microphone
            switch rest.first {
            case "on" where rest.count == 1: return .device(device, on: true)
            case "off" where rest.count == 1: return .device(device, on: false)
            case "allow": return .privilege(device, try one(rest.dropFirst(), "\(verb) allow bob"), allowed: true)
            case "deny": return .privilege(device, try one(rest.dropFirst(), "\(verb) deny bob"), allowed: false)
            case "mute" where rest.count == 1: return .roomMute(device, muted: true)
            case "unmute" where rest.count == 1: return .roomMute(device, muted: false)
            default: throw ActionError("use: \(verb) on, \(verb) off (yours), \(verb) allow <user>, \(verb) deny <user>, or \(verb) mute|unmute (every student's)")
            }
        case "mute-all":
            guard rest.isEmpty else { throw ActionError("mute-all takes nothing more") }
            return .muteAll
        case "carousel":
            switch rest.first {
            case nil, "status": return .carouselStatus
            case "stop": return .carouselStop
            case "start":
                var interval = Carousel.defaultIntervalSeconds
                if let intervalText {
                    guard let value = UInt32(intervalText), Carousel.intervalRange.contains(value) else {
                        throw ActionError("--interval takes 10 to 99 seconds, not '\(intervalText)'")
                    }
                    interval = value
                }
                guard let range = Carousel.Range(name: rangeText ?? "all") else {
                    throw ActionError("--range is all or camera-on, not '\(rangeText ?? "")'")
                }
                guard let order = Carousel.Order(name: orderText ?? "join-order") else {
                    throw ActionError("--order is join-order or random, not '\(orderText ?? "")'")
                }
                return .carouselStart(intervalSeconds: interval, range: range, order: order)
            default:
                throw ActionError("use: carousel [start [--interval <s>] [--range all|camera-on] [--order join-order|random] | stop]")
            }
        case "reward":
            var names = rest[...]
            if amount == nil, names.count > 1, let last = names.last, let value = Int(last) {
                amount = value
                names = names.dropLast()
            }
            let value = amount ?? 1
            guard (1...1_000).contains(value) else { throw ActionError("a reward is 1 to 1000, not \(value)") }
            return .reward(try users(names, "reward bob 2"), amount: value)
        case "kick": return .kick(try one(rest[...], "kick bob"))
        case "ban": return .ban(try one(rest[...], "ban bob"))
        case "hand":
            switch (rest.first, rest.count) {
            case ("up", 1): return .hand(up: true)
            case ("down", 1): return .hand(up: false)
            case ("down", 2): return rest[1] == "me" || rest[1] == local ? .hand(up: false) : .lowerHand(rest[1])
            case ("on", 1): return .handRaising(allowed: true, autoStage: autoStage)
            case ("off", 1) where !autoStage: return .handRaising(allowed: false, autoStage: false)
            default: throw ActionError("use: hand up, hand down (yours), hand down <user>, hand off, or hand on [--auto-stage]")
            }
        case "class":
            switch (rest.first, rest.count) {
            case ("start", 1): return .classStart
            case ("end", 1): return .classEnd
            default: throw ActionError("use: class start or class end")
            }
        case "schedule":
            guard let first = rest.first else { throw ActionError("use: schedule <minutes> [in <minutes>], as in: schedule 45 in 5") }
            let minutes = try number(first, 1...1_440, "the class length in minutes")
            if rest.count == 1 { return .schedule(minutes: minutes, startInMinutes: nil) }
            guard rest.count == 3, rest[1] == "in" else { throw ActionError("use: schedule <minutes> [in <minutes>], as in: schedule 45 in 5") }
            return .schedule(minutes: minutes, startInMinutes: try number(rest[2], 0...100_000, "the start, in minutes from now,"))
        case "room":
            guard let field = rest.first, rest.count >= 2 else {
                throw ActionError("use: room name <text>, room type <type>, room stage-limit <n> or room hand-limit <n>")
            }
            let value = rest.dropFirst().joined(separator: " ")
            switch field {
            case "name": return .roomName(value)
            case "type":
                guard let type = RoomType(name: value) else { throw ActionError("unknown room type '\(value)': use one-to-one, small-classroom or lecture-hall") }
                return .roomType(type)
            case "stage-limit": return .stageLimit(try number(value, 0...100_000, "a stage limit"))
            case "hand-limit": return .handLimit(try number(value, 0...100_000, "a hand limit"))
            default: throw ActionError("unknown room field '\(field)': use name, type, stage-limit or hand-limit")
            }
        case "prop", "props":
            guard let ownerWord = rest.first else { throw ActionError("use: prop room|me|<user> [set <key> <value> | unset <key>]") }
            let owner: PropertyOwner = ownerWord == "room" ? .room : .user(ownerWord == "me" ? local : ownerWord)
            switch (rest.count > 1 ? rest[1] : nil, rest.count) {
            case (nil, _), ("list", 2): return .propertyList(owner)
            case ("get", 3): return .propertyGet(owner, key: rest[2])
            case ("set", let count) where count >= 4:
                return .propertySet(owner, key: rest[2], value: rest.dropFirst(3).joined(separator: " "), ifRevision: ifRevision,
                                    ifSetRevision: ifSetRevision, fence: fence)
            case ("unset", 3): return .propertyUnset(owner, key: rest[2], ifRevision: ifRevision, ifSetRevision: ifSetRevision, fence: fence)
            default:
                throw ActionError("use: prop \(ownerWord) [get <key> | set <key> <value> | unset <key>] [--if-revision <n>] [--if-set-revision <n>] [--fence <lock>:<n>]")
            }
        case "group", "groups":
            switch (rest.first, rest.count) {
            case (nil, _), ("list", 1): return .groupList
            case ("create", 2), ("create", 3):
                guard Breakout.isValidID(rest[1]) else { throw ActionError("a group id is 1 to 16 bytes of a-z, 0-9, - and _, not '\(rest[1])'") }
                return .groupCreate(rest[1], name: rest.count == 3 ? rest[2] : nil)
            case ("create", let count) where count > 3:
                guard Breakout.isValidID(rest[1]) else { throw ActionError("a group id is 1 to 16 bytes of a-z, 0-9, - and _, not '\(rest[1])'") }
                return .groupCreate(rest[1], name: rest.dropFirst(2).joined(separator: " "))
            case ("random", 2): return .groupRandom(try number(rest[1], 1...Breakout.maxGroups, "a number of groups"))
            case ("remove", 2): return .groupRemove(rest[1])
            case ("move", let count) where count >= 3:
                let target = rest[count - 1]
                return .groupMove(try users(rest.dropFirst().dropLast(), "group move bob g1"), to: target == "main" ? nil : target)
            case ("broadcast", let count) where count >= 2: return .groupBroadcast(rest.dropFirst().joined(separator: " "))
            case ("end", 1): return .groupEnd
            default:
                throw ActionError("use: group [create <id> [<name>] | random <n> | move <user>... <id>|main | remove <id> | broadcast <text> | end]")
            }
        case "lock", "locks":
            func lockName() throws(ActionError) -> String {
                guard rest.count == 2, !rest[1].isEmpty, rest[1].utf8.count <= Locks.maxNameBytes else {
                    throw ActionError("use: lock \(rest.first ?? "acquire") <name> (a lock name is 1 to \(Locks.maxNameBytes) bytes)")
                }
                return rest[1]
            }
            switch rest.first {
            case nil, "list": return .lockList
            case "acquire":
                let name = try lockName()
                var ttl = Locks.defaultTTLSeconds
                if let ttlText {
                    guard let value = UInt32(ttlText), Locks.ttlRange.contains(value) else {
                        throw ActionError("--ttl takes \(Locks.ttlRange.lowerBound) to \(Locks.ttlRange.upperBound) seconds, not '\(ttlText)'")
                    }
                    ttl = value
                }
                var wait: UInt32 = 0
                if let waitText {
                    guard let value = UInt32(waitText), value <= 3_600 else { throw ActionError("--wait takes 0 to 3600 seconds, not '\(waitText)'") }
                    wait = value
                }
                return .lockAcquire(name, ttlSeconds: ttl, waitSeconds: wait)
            case "release": return .lockRelease(try lockName())
            case "revoke": return .lockRevoke(try lockName())
            default: throw ActionError("use: lock [acquire <name> [--ttl <s>] [--wait <s>] | release <name> | revoke <name>]")
            }
        case "name":
            guard !rest.isEmpty else { throw ActionError("use: name <text>") }
            return .rename(rest.joined(separator: " "))
        case "send", "say":
            guard !rest.isEmpty else { throw ActionError("use: send <text>, as in: send hello everyone") }
            return .send(text: rest.joined(separator: " "), type: messageType)
        case "whisper", "tell":
            guard rest.count >= 2 else { throw ActionError("use: whisper <user> <text>, as in: whisper bob see me after class") }
            return .whisper(rest[0] == "me" ? local : rest[0], text: rest.dropFirst().joined(separator: " "), type: messageType)
        case "history":
            switch (rest.first, rest.count) {
            case (nil, _):
                return .history(limit: try number(limitOption ?? "20", 1...10_000, "a number of messages"))
            case ("limit", 2): return .historyLimit(try number(rest[1], 1...10_000, "a history limit"))
            case ("clear", 1): return .historyClear
            case (let first?, 1) where Int(first) != nil: return .history(limit: try number(first, 1...10_000, "a number of messages"))
            default: throw ActionError("use: history [<n>], history limit <n> or history clear")
            }
        case "presence":
            switch (rest.first, rest.count) {
            case (nil, _), ("list", 1): return .presenceList
            case ("set", let count) where count >= 3: return .presenceSet(key: rest[1], value: rest.dropFirst(2).joined(separator: " "))
            case ("unset", 2): return .presenceSet(key: rest[1], value: nil)
            default: throw ActionError("use: presence, presence set <key> <value> or presence unset <key>")
            }
        case "mute", "unmute":
            let off = rest.contains("--off")
            let targets = rest.filter { $0 != "--off" }.map { $0 == "--all" ? "all" : $0 }
            guard targets.count == 1 else { throw ActionError("use: \(verb) <user> or \(verb) all (chat; mute-all is for microphones)") }
            let target: UserID? = targets[0] == "all" ? nil : (targets[0] == "me" ? local : targets[0])
            return .chatMute(target, muted: verb == "mute" && !off)
        default:
            throw ActionError("unknown action '\(verb)'")
        }
    }
}

struct ActionError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What an action did: a sentence for people, fields for `--json`.
struct ActionOutcome {
    var text: String
    var fields: [(String, JSONText)] = []
}

extension Action {
    /// Performs the action through the contexts; refusals come back as coded `ContextError`s.
    func perform(on pool: ContextPool) throws(ContextError) -> ActionOutcome {
        let local = pool.user.localUser.id
        func name(_ user: UserID) -> String { pool.user.userInfo(user)?.displayName ?? user }
        switch self {
        case let .stage(on, users):
            for user in users { try on ? pool.user.addCoHost(user) : pool.user.removeCoHost(user) }
            let waiting = on ? users.filter { pool.user.row($0)?.waitingForStage == true } : []
            var text = users.map(name).joined(separator: ", ") + (on ? " on stage" : " off stage")
            if !waiting.isEmpty { text += " (waiting for a seat: " + waiting.map(name).joined(separator: ", ") + ")" }
            return ActionOutcome(text: text, fields: [("users", .array(users.map { .string($0) }))])
        case let .invite(user, seconds):
            try pool.user.inviteToStage(user, seconds: seconds)
            return ActionOutcome(text: "\(name(user)) is invited to the stage for \(seconds) s (they answer with invitation accept|decline)",
                                 fields: [("user", .string(user)), ("seconds", .int(Int64(seconds)))])
        case let .answerInvitation(accept):
            try accept ? pool.user.acceptInvitation() : pool.user.declineInvitation()
            guard accept else { return ActionOutcome(text: "you declined the invitation to the stage", fields: [("accepted", .bool(false))]) }
            let waiting = pool.user.row(local)?.waitingForStage == true
            return ActionOutcome(text: waiting ? "you accepted: waiting for a seat on stage" : "you accepted: you are on stage",
                                 fields: [("accepted", .bool(true)), ("stage", .string(waiting ? "waiting" : "on"))])
        case .invitationStatus:
            let now = WallClock.nowMillis()
            let mine = pool.user.invitation
            let pending = pool.user.pendingInvitations
            var lines: [String] = [mine.map { "yours: " + Self.describe($0, nowMillis: now) } ?? "you have no invitation to the stage"]
            lines += pending.filter { $0.user.id != local }.map { Self.describe($0, nowMillis: now) }
            return ActionOutcome(text: lines.joined(separator: "\n"), fields: [
                ("invitation", mine.map { Self.json($0) } ?? .null), ("pending", .array(pending.map { Self.json($0) })),
            ])
        case .stageClear:
            let count = try pool.user.removeAllCoHosts()
            return ActionOutcome(text: "stage cleared (\(count) taken off)", fields: [("removed", .int(Int64(count)))])
        case let .board(user, granted):
            try pool.user.setBoard(user, granted: granted)
            return ActionOutcome(text: "whiteboard \(granted ? "granted to" : "revoked from") \(name(user))")
        case let .device(device, on):
            try on ? pool.stream.openLocalDevice(device) : pool.stream.closeLocalDevice(device)
            let state = pool.stream.streamState(of: local, device: device)
            return ActionOutcome(text: "your \(device) is \(on ? "on" : "off") (\(Self.describe(state)))",
                                 fields: [("state", .string(state.description))])
        case let .privilege(device, user, allowed):
            try pool.stream.updatePublishPrivilege(of: user, device: device, allowed: allowed)
            let state = pool.stream.streamState(of: user, device: device)
            return ActionOutcome(text: "\(name(user)) may \(allowed ? "" : "no longer ")publish the \(device) (\(Self.describe(state)))",
                                 fields: [("state", .string(state.description))])
        case let .roomMute(device, muted):
            try pool.stream.muteRoom(device, muted: muted)
            let text = muted ? "every student's \(device) is muted: students cannot turn it on until you unmute it"
                : "students' \(device)s are unmuted: each student may turn theirs on again"
            return ActionOutcome(text: text, fields: [("device", .string(device.description)), ("muted", .bool(muted))])
        case .muteAll:
            try pool.stream.muteAllMicrophones()
            return ActionOutcome(text: "every microphone privilege is off")
        case let .carouselStart(interval, range, order):
            try pool.stream.startCarousel(intervalSeconds: interval, range: range, order: order)
            return Self.carouselOutcome(pool, name, started: true)
        case .carouselStop:
            try pool.stream.stopCarousel()
            return ActionOutcome(text: "the carousel is stopped", fields: [("running", .bool(false))])
        case .carouselStatus:
            return Self.carouselOutcome(pool, name, started: false)
        case let .reward(users, amount):
            try pool.user.reward(users, amount: amount)
            let totals = users.map { (user: $0, total: pool.user.row($0)?.rewards ?? 0) }
            return ActionOutcome(text: totals.map { "\(name($0.user)) +\(amount) (now \($0.total))" }.joined(separator: ", "),
                                 fields: [("rewards", .object(totals.map { ($0.user, .int($0.total)) }))])
        case let .kick(user):
            try pool.user.kickOut(user, forever: false)
            return ActionOutcome(text: "\(name(user)) was kicked out (may join again)")
        case let .ban(user):
            try pool.user.kickOut(user, forever: true)
            return ActionOutcome(text: "\(name(user)) is banned from the room")
        case let .hand(up):
            try up ? pool.user.handsWave() : pool.user.handsDown()
            // With auto-stage and a free seat, the raise put the student on stage instead.
            if up, let row = pool.user.row(local), row.onStage && !row.handRaised {
                return ActionOutcome(text: "you are on stage: the room's auto-stage gave your raised hand a seat", fields: [("stage", .bool(true))])
            }
            return ActionOutcome(text: "your hand is \(up ? "up" : "down")")
        case let .handRaising(allowed, autoStage):
            try pool.user.allowHandsUp(allowed, autoStage: autoStage)
            let text = !allowed ? "hand raising is off: students cannot raise their hands, and raised ones are lowered"
                : autoStage ? "hand raising is on, with auto-stage: a student's raise takes a free stage seat" : "hand raising is on"
            return ActionOutcome(text: text, fields: [("allowed", .bool(allowed)), ("auto_stage", .bool(autoStage))])
        case let .lowerHand(user):
            try pool.user.lowerHand(of: user)
            return ActionOutcome(text: "\(name(user))'s hand is down")
        case .classStart:
            try pool.room.startClass()
            return ActionOutcome(text: "class started")
        case .classEnd:
            try pool.room.endClass()
            return ActionOutcome(text: "class ended")
        case let .schedule(minutes, startIn):
            var schedule = pool.room.classInfo.schedule
            schedule.durationSeconds = UInt32(minutes * 60)
            if let startIn { schedule.startMillis = WallClock.nowMillis() + UInt64(startIn) * 60_000 }
            try pool.room.setSchedule(schedule)
            return ActionOutcome(text: "the class lasts \(minutes) minutes" + (startIn.map { ", starting in \($0) minutes" } ?? ""))
        case let .roomName(text):
            try pool.room.setName(text)
            return ActionOutcome(text: "the room is now called \(text)")
        case let .roomType(type):
            try pool.room.setType(type)
            return ActionOutcome(text: "the room is now a \(type)")
        case let .stageLimit(limit):
            try pool.room.setStageLimit(limit)
            return ActionOutcome(text: "the stage now has \(limit) seats")
        case let .handLimit(limit):
            try pool.room.setHandLimit(limit)
            return ActionOutcome(text: "up to \(limit) hands may be raised")
        case let .propertySet(owner, key, value, ifRevision, ifSetRevision, fence):
            let receipt: PropertyWriteReceipt
            switch owner {
            case .room: receipt = try pool.room.updateProperty(key, value: value, ifRevision: ifRevision, ifSetRevision: ifSetRevision, fence: fence)
            case let .user(user):
                receipt = try pool.user.updateProperty(of: user, key, value: value, ifRevision: ifRevision, ifSetRevision: ifSetRevision, fence: fence)
            }
            return ActionOutcome(text: "\(Self.describe(owner, name)) \(key) = \(value) (revision \(receipt.revision), set revision \(receipt.setRevision))",
                                 fields: [("revision", .int(Int64(receipt.revision))), ("set_revision", .int(Int64(receipt.setRevision)))])
        case let .propertyUnset(owner, key, ifRevision, ifSetRevision, fence):
            let receipt: PropertyWriteReceipt
            switch owner {
            case .room: receipt = try pool.room.updateProperty(key, value: nil, ifRevision: ifRevision, ifSetRevision: ifSetRevision, fence: fence)
            case let .user(user):
                receipt = try pool.user.updateProperty(of: user, key, value: nil, ifRevision: ifRevision, ifSetRevision: ifSetRevision, fence: fence)
            }
            return ActionOutcome(text: "\(Self.describe(owner, name)) \(key) deleted (revision \(receipt.revision), set revision \(receipt.setRevision))",
                                 fields: [("revision", .int(Int64(receipt.revision))), ("set_revision", .int(Int64(receipt.setRevision)))])
        case let .propertyList(owner):
            let entries = Self.entries(owner, pool)
            let setRevision: UInt64
            switch owner {
            case .room: setRevision = pool.room.propertySetRevision
            case let .user(user): setRevision = pool.user.propertySetRevision(of: user)
            }
            let text = entries.isEmpty ? "\(Self.describe(owner, name)): no properties (set revision \(setRevision))"
                : (entries.map { Self.describe($0, owner: Self.describe(owner, name)) } + ["set revision \(setRevision)"]).joined(separator: "\n")
            return ActionOutcome(text: text, fields: [("properties", .object(entries.map { ($0.key, .string($0.value)) })),
                                                      ("revisions", .object(entries.map { ($0.key, .int(Int64($0.revision))) })),
                                                      ("set_revision", .int(Int64(setRevision)))])
        case let .propertyGet(owner, key):
            guard let entry = Self.entries(owner, pool).first(where: { $0.key == key }) else {
                throw ContextError(code: "not-found", message: "\(Self.describe(owner, name)) has no property '\(key)'; list them with: prop \(owner == .room ? "room" : "<user>")")
            }
            return ActionOutcome(text: Self.describe(entry, owner: Self.describe(owner, name)),
                                 fields: [("key", .string(entry.key)), ("value", .string(entry.value)), ("revision", .int(Int64(entry.revision))),
                                          ("operator", .string(entry.operatorID)), ("cause", .string(entry.cause))])
        case let .lockAcquire(lock, ttl, wait):
            let grant = try pool.lock.acquire(lock, ttlSeconds: ttl, waitMillis: UInt64(wait) * 1_000)
            return ActionOutcome(text: "you hold \(lock) with fence \(grant.fence) (TTL \(ttl) s); guard writes with --fence \(grant.lockFence)",
                                 fields: [("lock", .string(lock)), ("fence", .int(Int64(bitPattern: grant.fence))), ("ttl_seconds", .int(Int64(ttl)))])
        case let .lockRelease(lock):
            try pool.lock.release(lock)
            return ActionOutcome(text: "you let go of \(lock)")
        case let .lockRevoke(lock):
            try pool.lock.revoke(lock)
            return ActionOutcome(text: "\(lock) is revoked: whoever held it no longer does")
        case .lockList:
            let locks = pool.lock.locks
            let now = WallClock.nowMillis()
            let lines = locks.map { lock -> String in
                guard let holder = lock.holder else { return "\(lock.name): free (last fence \(lock.fence))" }
                let lapse = lock.lapsesAtMillis.map { ", \(holder) is offline: lapses in \(max(0, (Int64($0) - Int64(now) + 999) / 1_000)) s" } ?? ""
                return "\(lock.name): held by \(name(holder)), fence \(lock.fence), TTL \(lock.ttlSeconds) s\(lapse)"
            }
            return ActionOutcome(text: locks.isEmpty ? "no locks in this room" : lines.joined(separator: "\n"), fields: [
                ("locks", .array(locks.map { lock in
                    .object([("name", .string(lock.name)), ("holder", lock.holder.map { .string($0) } ?? .null),
                             ("fence", .int(Int64(bitPattern: lock.fence))), ("ttl_seconds", .int(Int64(lock.ttlSeconds))),
                             ("lapses_at_ms", lock.lapsesAtMillis.map { .int(Int64($0)) } ?? .null)])
                })),
            ])
        case .groupList:
            return Self.groupOutcome(pool, name, "")
        case let .groupCreate(id, groupName):
            try pool.group.create(id, name: groupName)
            return Self.groupOutcome(pool, name, "group \(id) created")
        case let .groupRandom(count):
            try pool.group.createRandom(count: count)
            return Self.groupOutcome(pool, name, "\(count) groups created")
        case let .groupRemove(id):
            try pool.group.remove(id)
            return Self.groupOutcome(pool, name, "group \(id) removed")
        case let .groupMove(users, target):
            try pool.group.move(users, to: target)
            return Self.groupOutcome(pool, name, users.map(name).joined(separator: ", ") + " moved to " + (target ?? "the main room"))
        case let .groupBroadcast(text):
            let reached = try pool.group.broadcast(text)
            return ActionOutcome(text: reached.isEmpty ? "no breakout groups to broadcast to" : "sent to \(reached.count) groups: " + reached.joined(separator: ", "),
                                 fields: [("groups", .array(reached.map { .string($0) }))])
        case .groupEnd:
            try pool.group.endAll()
            return ActionOutcome(text: "every breakout group ended: everyone is back in the main room", fields: [("groups", .array([]))])
        case let .rename(text):
            try pool.user.updateName(text)
            return ActionOutcome(text: "you are now called \(text)")
        case let .send(text, type):
            let key = try pool.message.sendRoomMessage(text, type: type)
            return ActionOutcome(text: "sent to the room (\(key))", fields: [("id", .string(key.description))])
        case let .whisper(user, text, type):
            let key = try pool.message.sendPeerMessage(to: user, text, type: type)
            return ActionOutcome(text: "sent to \(name(user)) only (\(key))", fields: [("id", .string(key.description))])
        case let .history(limit):
            let messages = pool.message.history(limit: limit)
            let text = messages.isEmpty ? "no messages yet" : messages.map { MessageText.line($0, local: local) }.joined(separator: "\n")
            return ActionOutcome(text: text, fields: [("messages", .array(messages.map(MessageText.json)))])
        case let .historyLimit(limit):
            try pool.message.setHistoryLimit(limit)
            return ActionOutcome(text: "the room now keeps its newest \(limit) messages")
        case .historyClear:
            try pool.message.clearHistory()
            return ActionOutcome(text: "the history is cleared")
        case .presenceList:
            let online = pool.message.onlineUsers
            let text = online.isEmpty ? "no one is online" : online.map { MessageText.presence($0, local: local) }.joined(separator: "\n")
            return ActionOutcome(text: text, fields: [("online", .array(online.map(MessageText.presenceJSON)))])
        case let .presenceSet(key, value):
            try pool.message.setPresenceState([key: value])
            return ActionOutcome(text: value.map { "your presence \(key) = \($0)" } ?? "your presence \(key) removed")
        case let .chatMute(user, muted):
            if let user { try pool.message.muteChat(of: user, muted: muted) } else { try pool.message.muteRoomChat(muted) }
            let whom = user.map(name) ?? "every student"
            return ActionOutcome(text: "chat \(muted ? "muted" : "unmuted") for \(whom)")
        }
    }

    static func entries(_ owner: PropertyOwner, _ pool: ContextPool) -> [PropertyEntry] {
        switch owner {
        case .room: return pool.room.propertyEntries
        case let .user(user): return pool.user.propertyEntries(of: user)
        }
    }

    static func describe(_ entry: PropertyEntry, owner: String) -> String {
        "\(owner) \(entry.key) = \(MessageText.printable(entry.value)) (revision \(entry.revision), by \(entry.operatorID)"
            + (entry.cause.isEmpty ? "" : ", cause \(MessageText.printable(entry.cause))") + ")"
    }

    /// The live groups, after `done` (a sentence, or empty for a plain listing).
    static func groupOutcome(_ pool: ContextPool, _ name: (UserID) -> String, _ done: String) -> ActionOutcome {
        let groups = pool.group.groups
        let lines = groups.map { group in
            "\(group.id) \(group.name) (room \(group.roomID)): " + (group.members.isEmpty ? "nobody yet" : group.members.map(name).joined(separator: ", "))
        }
        let listing = groups.isEmpty ? "no breakout groups" : lines.joined(separator: "\n")
        return ActionOutcome(text: done.isEmpty ? listing : done + "\n" + listing, fields: [
            ("groups", .array(groups.map { group in
                .object([("id", .string(group.id)), ("name", .string(group.name)), ("room", .string(group.roomID)),
                         ("members", .array(group.members.map { .string($0) }))])
            })),
        ])
    }

    /// What the carousel does now, as this replica derives it.
    static func carouselOutcome(_ pool: ContextPool, _ name: (UserID) -> String, started: Bool) -> ActionOutcome {
        guard let carousel = pool.stream.carousel else {
            return ActionOutcome(text: "no carousel runs", fields: [("running", .bool(false))])
        }
        let seconds = max(0, (Int64(carousel.nextTurnAtMillis) - Int64(WallClock.nowMillis()) + 999) / 1_000)
        let who = carousel.onStage.isEmpty ? "nobody" : carousel.onStage.map(name).joined(separator: ", ")
        let rotation = carousel.rotates ? "next turn in \(seconds) s" : "everyone fits on stage, nothing rotates"
        let text = "\(started ? "carousel started" : "carousel"): every \(carousel.intervalSeconds) s, \(carousel.range.name), "
            + "\(carousel.order.name); turn \(carousel.turn + 1): \(who) on stage; \(rotation)"
        return ActionOutcome(text: text, fields: [
            ("running", .bool(true)), ("interval_seconds", .int(Int64(carousel.intervalSeconds))),
            ("range", .string(carousel.range.name)), ("order", .string(carousel.order.name)),
            ("turn", .int(Int64(carousel.turn))), ("on_stage", .array(carousel.onStage.map { .string($0) })),
            ("next_turn_at_ms", .int(Int64(carousel.nextTurnAtMillis))), ("rotates", .bool(carousel.rotates)),
        ])
    }

    static func describe(_ owner: PropertyOwner, _ name: (UserID) -> String) -> String {
        switch owner {
        case .room: return "room"
        case let .user(user): return name(user)
        }
    }

    /// The four states in words.
    /// "bob invited by Ms T for 30 s: pending, 12 s left".
    static func describe(_ invitation: InvitationInfo, nowMillis: UInt64) -> String {
        let by = invitation.inviter.map { " by \($0.displayName)" } ?? ""
        let left = invitation.status == .pending ? ", \(invitation.secondsLeft(nowMillis: nowMillis)) s left" : ""
        return "\(invitation.user.displayName) invited\(by) for \(invitation.seconds) s: \(invitation.status.rawValue)\(left)"
    }

    static func json(_ invitation: InvitationInfo) -> JSONText {
        .object([("user", .string(invitation.user.id)), ("inviter", invitation.inviter.map { .string($0.id) } ?? .null),
                 ("seconds", .int(Int64(invitation.seconds))), ("expires_ms", .int(Int64(invitation.expiresAtMillis))),
                 ("status", .string(invitation.status.rawValue))])
    }

    static func describe(_ state: StreamState) -> String {
        switch state {
        case .inoperable: return "not on stage"
        case .deviceOff: return "on stage, device off"
        case .privilegeOff: return "on stage, device on, not allowed to publish"
        case .live: return "live"
        }
    }
}
