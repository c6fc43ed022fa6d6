extension RoomState {
    /// The invitation to the stage `user` may answer now: the latest one, unanswered, and
    /// not withdrawn. A stage write about `user` (a teacher's add or remove) or a kick
    /// stamped after the invitation withdraws it: the teacher has decided since.
    public func openInvitation(for user: UserID) -> StageInvitation? {
        guard let invitation = invitations[user], invitation.answer == nil else { return nil }
        if let record = users[user], invitation.issued < record.kicked || invitation.issued < record.stage.stamp { return nil }
        return invitation
    }

    /// Why a teacher may not invite `user` now (nil: it may).
    func invitationRefusal(invite user: UserID) -> WriteError? {
        if type.value == .oneToOne { return .invalid("both parties of a one-to-one room are always on stage: nobody to invite") }
        if carousel.value.running { return .invalid("the carousel decides the stage while it runs: stop it to invite") }
        if isOnStage(user) { return .invalid("\(user) is on stage already") }
        return nil
    }

    /// Why `user` may not answer now (nil: it may). The origin's clock only screens the
    /// answer; whether it came in time is decided by its stamp on every replica.
    func answerRefusal(_ user: UserID, accept: Bool, nowMillis: UInt64) -> WriteError? {
        guard let invitation = invitations[user] else { return .noInvitation }
        if let answer = invitation.answer { return .invitationAnswered(accepted: answer.accepted) }
        guard openInvitation(for: user) != nil else { return .noInvitation }
        if nowMillis > invitation.expiresAtMillis { return .invitationExpired(expiresAtMillis: invitation.expiresAtMillis) }
        // Where the stage register decides nothing, an accept would be acknowledged and of no effect.
        if accept && type.value == .oneToOne { return .invalid("the room became one-to-one: both parties are on stage, there is no seat to accept") }
        if accept && carousel.value.running { return .invalid("the carousel decides the stage while it runs: accept once it stops") }
        // An accept takes a seat the way a teacher's stage add does.
        if accept && !isOnStage(user) && type.value != .oneToOne && stageWinners.count >= stageLimitValue {
            return .stageFull(limit: stageLimitValue)
        }
        return nil
    }

    /// The answer's invitation as its origin sees it (`prepare`): the stamp and duration
    /// every replica decides its timeliness from.
    func prepareAnswer(_ accept: Bool, author: UserID) -> Operation {
        guard let invitation = openInvitation(for: author) else { return .answerInvitation(accept: accept) }
        return .answerInvitation(accept: accept, invitation: invitation.issued, seconds: invitation.seconds)
    }

    /// Merges one invitation record; `.invitationUpdated` when it changed.
    mutating func mergeInvitation(_ user: UserID, _ invitation: StageInvitation) -> [RoomChange] {
        if invitations[user] == nil {
            invitations[user] = invitation
            return [.invitationUpdated(user)]
        }
        return invitations[user]!.merge(invitation) ? [.invitationUpdated(user)] : []
    }
}
