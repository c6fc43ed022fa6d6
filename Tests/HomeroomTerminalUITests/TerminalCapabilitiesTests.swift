import Testing
@testable import HomeroomTerminalUI

@Suite struct TerminalCapabilitiesTests {
    @Test func columnsWinAndNoColorIsHonoured() {
        // Tests run without a terminal on stdout, so colours are off whatever NO_COLOR says.
        let detected = TerminalCapabilities.detect(environment: ["COLUMNS": "123", "NO_COLOR": "1"])
        #expect(detected.width == 123)
        #expect(detected.colors == false)
    }
}
