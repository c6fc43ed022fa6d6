import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// Cameras and microphones (AgoraEduStreamContext and the device part of AgoraEduMediaContext):
/// the local user's own devices, and publish privileges for others (teacher, assistant).
/// A stream shows one of four states: not on stage; on stage, device off; device on but
/// not allowed to publish; live.
public final class StreamContext: Sendable {
    let session: ClassroomSession
    init(_ session: ClassroomSession) { self.session = session }

    public func registerEventHandler(_ handler: any StreamHandler) { session.register(handler) }
    public func unregisterEventHandler(_ handler: any StreamHandler) { session.unregister(handler) }

    /// Turns the local user's camera or microphone on (the device flag; it streams once
    /// the user is on stage and allowed to publish). While the room mutes that device, a
    /// student's is refused `device-muted`.
    public func openLocalDevice(_ device: Device) throws(ContextError) {
        try session.write(.setDevice(user: session.config.user, device: device, on: true))
    }

    public func closeLocalDevice(_ device: Device) throws(ContextError) {
        try session.write(.setDevice(user: session.config.user, device: device, on: false))
    }

    /// Whether the local user's own device is on, whatever the stage, as the room counts
    /// it: a student's device the room's mute covers is off (its flag may still be set).
    public func isLocalDeviceOn(_ device: Device) -> Bool {
        let replica = session.replica
        guard let record = replica.users[session.config.user] else { return false }
        return replica.streamRules.deviceOn(record, device)
    }

    /// Lets a user publish (or stops it).
    public func updatePublishPrivilege(of user: UserID, device: Device, allowed: Bool) throws(ContextError) {
        try session.write(.setPrivilege(user: user, device: device, allowed: allowed))
    }

    /// Turns off every microphone privilege granted so far.
    public func muteAllMicrophones() throws(ContextError) { try session.write(.muteAll) }

    /// Teacher, assistant: mutes (or unmutes) every student's camera or microphone, room-wide
    /// (Flexible Classroom's `muteVideo` / `muteAudio`). While muted, no student's device of
    /// that kind counts as on (the ones that were on show as off) and a student's attempt to
    /// turn it on is refused `device-muted`; teachers and assistants are not affected.
    /// Unmuting lets students turn it on again; nothing turns on by itself.
    public func muteRoom(_ device: Device, muted: Bool = true) throws(ContextError) {
        try session.write(.setDeviceMuted(device: device, muted: muted))
    }

    /// Whether the room mutes every student's camera (or microphone) now.
    public func isRoomMuted(_ device: Device) -> Bool { session.replica.mute(device).isClosed }

    /// The state the roster shows for a user's camera or microphone.
    public func streamState(of user: UserID, device: Device) -> StreamState {
        let replica = session.replica
        guard let record = replica.users[user] else { return .inoperable }
        let onStage = replica.stage(atMillis: WallClock.nowMillis()).contains(user)
        return replica.streamRules.state(record, device, onStage: onStage)
    }

    /// The stage carousel (Flexible Classroom's): students take turns on stage every
    /// `intervalSeconds` (10-99), all online students or those with the camera on, in
    /// join order or shuffled per turn. Every replica derives the same turn from the
    /// class clock, so nobody coordinates it; with no more students than seats, all of
    /// them are on stage and nothing rotates. Teacher, assistant.
    public func startCarousel(intervalSeconds: UInt32 = Carousel.defaultIntervalSeconds, range: Carousel.Range = .all,
                              order: Carousel.Order = .joinOrder) throws(ContextError) {
        try session.write(.setCarousel(Carousel(running: true, intervalSeconds: intervalSeconds, range: range, order: order)))
    }

    /// Stops the carousel: the stage is again who was put there.
    public func stopCarousel() throws(ContextError) {
        var settings = session.replica.carousel.value
        settings.running = false
        try session.write(.setCarousel(settings))
    }

    /// The running carousel and its current turn (nil when none runs).
    public var carousel: CarouselStatus? {
        let replica = session.replica
        guard let turn = replica.carouselTurn(atMillis: WallClock.nowMillis()) else { return nil }
        return CarouselStatus(replica.carousel.value, turn)
    }

    /// Every stream of the users on stage.
    public var streamList: [StreamInfo] {
        let replica = session.replica
        return ReadModel.rows(replica, .everyone).filter(\.onStage).flatMap { row in
            [StreamInfo(owner: row.info, device: .camera, state: row.camera),
             StreamInfo(owner: row.info, device: .microphone, state: row.microphone)]
        }
    }
}
