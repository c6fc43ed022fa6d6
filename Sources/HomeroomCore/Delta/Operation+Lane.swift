extension Operation {
    /// A teacher's control of the class (stage and invitations to it, devices, chat
    /// mutes, removals, class state, hand raising), and a student's answer to an invitation: the node admits, sequences and stores these ahead of chat,
    /// presence and every other write waiting (the teacher lane, docs/ARCHITECTURE.md),
    /// so a flood of messages does not hold up a "mute all". Only the order of waiting
    /// changes: who may write what is decided as for any write.
    public var isTeacherControl: Bool {
        switch self {
        case .setStage, .setPrivilege, .setBoard, .setClassState, .muteAll, .setDeviceMuted, .setHandRaising,
             .setChatMuted, .kick, .ban, .inviteToStage,
             // The student's answer races the invitation's deadline: a flood must not make it late.
             .answerInvitation:
            return true
        case .setRoomName, .setRoomType, .setStageLimit, .setHandLimit, .setSchedule, .setCarousel, .setRoomProperty,
             .joinSession, .leaveSession, .foldSessions, .foldRewards, .replicaDown, .retirePredecessors, .setName,
             .setDevice, .setHand, .reward, .setUserProperty, .sendMessage, .sendPeerMessage, .trimHistory,
             .setHistoryLimit, .setPresenceState, .acquireLock, .releaseLock, .setBreakoutGroup, .assignBreakoutGroup,
             .endBreakout:
            return false
        }
    }

    /// A student's answer to an invitation to the stage (it rides the lane whoever writes it).
    public var isInvitationAnswer: Bool {
        if case .answerInvitation = self { return true }
        return false
    }
}
