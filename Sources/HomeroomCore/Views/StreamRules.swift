/// The room-wide inputs to every camera and microphone state, besides each user's own
/// registers: mute-all (a microphone privilege granted before it is off) and the room's
/// camera and microphone mutes (`RoomGate`: a student's device turned on outside an open
/// gate counts as off). Teachers and assistants are never muted by a room mute.
///
/// One derivation for every view (the change sets, the roster, the contexts, the
/// simulation's mirror), so they cannot disagree on what a mute turns off.
public struct StreamRules: Hashable, Sendable {
    public var muteAll: Stamp
    public var cameraMute: RoomGate
    public var microphoneMute: RoomGate

    public init(muteAll: Stamp = .origin, cameraMute: RoomGate = RoomGate(), microphoneMute: RoomGate = RoomGate()) {
        self.muteAll = muteAll
        self.cameraMute = cameraMute
        self.microphoneMute = microphoneMute
    }

    public func mute(_ device: Device) -> RoomGate { device == .camera ? cameraMute : microphoneMute }

    /// Whether the user's device counts as on: its flag, unless the room's mute of that
    /// device covers it (the flag was turned on before the mute, or while it held).
    @inline(__always)
    public func deviceOn(_ record: UserRecord, _ device: Device) -> Bool {
        let flag = device == .camera ? record.cameraDevice : record.microphoneDevice
        guard flag.value else { return false }
        return record.role.value.moderates || mute(device).admits(flag.stamp)
    }

    /// Whether the user may publish the device: its privilege (a microphone's only if granted after the latest mute-all).
    @inline(__always)
    public func privilegeOn(_ record: UserRecord, _ device: Device) -> Bool {
        if device == .camera { return record.cameraPrivilege.value }
        return record.microphonePrivilege.value && muteAll < record.microphonePrivilege.stamp
    }

    /// One of the four states the roster shows.
    @inline(__always)
    public func state(_ record: UserRecord, _ device: Device, onStage: Bool) -> StreamState {
        guard onStage else { return .inoperable }
        return .derive(onStage: true, deviceOn: deviceOn(record, device), privilegeOn: privilegeOn(record, device))
    }
}
