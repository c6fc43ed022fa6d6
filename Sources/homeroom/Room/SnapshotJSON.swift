import HomeroomContext
import HomeroomSupport

/// The room's read model as JSON, for `homeroom roster --json` and scripts.
enum SnapshotJSON {
    static func render(_ snapshot: RoomSnapshot) -> String { value(snapshot).rendered }

    static func value(_ snapshot: RoomSnapshot) -> JSONText {
        let room = snapshot.room
        let info = snapshot.classInfo
        return .object([
            ("room", .object([("id", .string(room.id)), ("name", .string(room.name)), ("type", .string(room.type.description)),
                              ("stage_limit", .int(Int64(room.stageLimit))), ("hand_limit", .int(Int64(room.handLimit))),
                              ("muted_devices", .array(Device.allCases.filter(room.mutedDevices.contains).map { .string($0.description) })),
                              ("hand_raising", .string(room.handRaising.description))])),
            // "state" keeps the wire's three; "closed" is derived (the close delay passed).
            ("class", .object([("state", .string(info.state.description)), ("closed", .bool(info.display(now: WallClock.nowMillis()) == .closed)),
                               ("since_ms", .int(Int64(info.sinceMillis))),
                               ("start_ms", .int(Int64(info.schedule.startMillis))),
                               ("duration_s", .int(Int64(info.schedule.durationSeconds)))])),
            ("connection", .string(snapshot.connection.rawValue)),
            ("online", .int(Int64(snapshot.onlineCount))),
            ("observers", .int(Int64(snapshot.observerCount))),
            ("stage", .array(snapshot.stage.map { .string($0.id) })),
            ("stage_waiting", .array(snapshot.stageWaiting.map { .string($0.id) })),
            ("hands", .array(snapshot.raisedHands.map { .string($0.id) })),
            ("hands_waiting", .array(snapshot.waitingHands.map { .string($0.id) })),
            ("moderators", .array(snapshot.moderators.map(row))),
            ("students", .array(snapshot.students.rows.map(row))),
            ("page", .object([("index", .int(Int64(snapshot.students.index))), ("size", .int(Int64(snapshot.students.size))),
                              ("total", .int(Int64(snapshot.students.total)))])),
            ("invitations", .array(snapshot.invitations.map(Action.json))),
        ])
    }

    static func row(_ row: UserRow) -> JSONText {
        .object([
            ("user", .string(row.id)), ("name", .string(row.info.displayName)), ("role", .string(row.info.role.description)),
            ("online", .bool(row.online)),
            ("stage", .string(row.onStage ? "on" : (row.waitingForStage ? "waiting" : "off"))),
            ("auth", .bool(row.boardGranted)),
            ("camera", .string(row.camera.description)), ("mic", .string(row.microphone.description)),
            ("rewards", .int(row.rewards)), ("hand", .bool(row.handRaised)),
        ])
    }
}
