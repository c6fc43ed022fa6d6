extension RoomState {
    /// Whether the origin turns this write, a student's raise of its own hand, into its
    /// promotion to the stage (Flexible Classroom's auto-stage): hand raising is on with
    /// auto-stage, the room is not one-to-one (both parties are always on stage there),
    /// no carousel runs (its turns decide the stage), the student is not on stage yet,
    /// and a seat is free. Otherwise the raise is a raise: with the stage full, the hand
    /// stays raised.
    ///
    /// Decided once, by the node that sequences the raise (`prepare` writes `setStage` as
    /// the system, for the author): every replica applies that stage write alike, in the
    /// candidate order; two raises that took the last seat at two nodes at once are both
    /// promoted, and the later (by stamp) waits for a seat, as concurrent promotions do.
    public func autoStages(_ write: Write) -> Bool {
        guard case let .setHand(user, true) = write.operation, user == write.author, !write.authorRole.moderates,
              handRaisingPolicy.autoStage, type.value != .oneToOne, !carousel.value.running, !isOnStage(user) else { return false }
        return stageWinners.count < stageLimitValue
    }
}
