import Foundation
import HomeroomTestSupport
import Testing

/// The room's camera mute against two `homeroom node` processes: the teacher mutes every
/// student's camera through one node; a student's camera-on through the other is refused
/// with the code, the roster there shows her camera off, and after the unmute she turns
/// it on again (it does not come back by itself).
@Suite(.serialized) struct RoomMuteProcessTests {
    @Test func aStudentsCameraOnIsRefusedWhileTheTeacherMutesTheRoom() throws {
        let first = try NodeChild(name: "mutes-a")
        let second = try NodeChild(name: "mutes-b", seeds: [first.listen])
        defer { second.stop(); first.stop() }
        func run(_ words: [String], on node: NodeChild = first) throws -> CLI.Result {
            let result = try CLI.run(words + ["--room", "mutes", "--node", node.listen])
            #expect(!result.timedOut, "\(words) timed out")
            return result
        }
        func roster(on node: NodeChild) throws -> [String: Any] {
            let result = try run(["roster", "--json"], on: node)
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout) \(result.stderr)")
        }
        func camera(of user: String, on node: NodeChild) throws -> String? {
            ((try roster(on: node))["students"] as? [[String: Any]])?.first { $0["user"] as? String == user }?["camera"] as? String
        }
        #expect(try run(["camera", "on", "--user", "ana"], on: second).status == 0)
        // Ana joined through the second node: the first must know her before the teacher's write there.
        #expect(eventually(10) { (try? camera(of: "ana", on: first)) != nil })
        #expect(try run(["stage", "add", "ana"]).status == 0)
        #expect(try run(["camera", "allow", "ana"]).stdout == "ana may publish the camera (live)\n")

        let muted = try run(["camera", "mute", "--json"])
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(muted.stdout.utf8)) as? [String: Any], "\(muted.stderr)")
        #expect(fields["ok"] as? Bool == true && fields["device"] as? String == "camera" && fields["muted"] as? Bool == true, "\(fields)")
        // The other node shows it: the room's mute, and ana's camera off.
        #expect(eventually(10) { (try? camera(of: "ana", on: second)) == "device-off" }, "ana's camera on the second node: \(String(describing: try? camera(of: "ana", on: second)))")
        #expect(((try roster(on: second))["room"] as? [String: Any])?["muted_devices"] as? [String] == ["camera"])
        let refused = try run(["camera", "on", "--user", "ana"], on: second)
        #expect(refused.status == 1, "\(refused.stdout)")
        #expect(refused.stderr.hasPrefix("Error: refused [device-muted]: a teacher has muted every student's camera in this room"), "\(refused.stderr)")
        let asStudent = try run(["camera", "unmute", "--as", "student", "--user", "ana"], on: second)
        #expect(asStudent.status == 1 && asStudent.stderr.contains("[not-allowed]"), "\(asStudent.stderr)")
        // Her microphone is not muted.
        #expect(try run(["mic", "on", "--user", "ana"], on: second).status == 0)

        #expect(try run(["camera", "unmute"], on: second).stdout == "students' cameras are unmuted: each student may turn theirs on again\n")
        #expect(eventually(10) { ((try? roster(on: first))?["room"] as? [String: Any])?["muted_devices"] as? [String] == [] })
        #expect(try camera(of: "ana", on: first) == "device-off", "an unmute turns nothing on")
        let again = try run(["camera", "on", "--user", "ana"])
        #expect(again.status == 0 && again.stdout == "your camera is on (live)\n", "\(again.stdout) \(again.stderr)")
    }
}
