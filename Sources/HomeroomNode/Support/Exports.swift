// The node's API takes a Logger and reads WallClock: its users get them with it.
@_exported import HomeroomSupport
