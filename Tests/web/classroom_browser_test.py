#!/usr/bin/env python3
"""The classroom in a real browser: headless Chromium against `homeroom web` and real nodes.

Two nodes that require join tokens and speak TLS (tls+tcp://, certificates made by
Deploy/tls-certs.sh), one `homeroom web --tls-ca` in front of both, and three browser
pages (a teacher, two students), each logging in with its own token.
Checks, on the pages' content:
  - a student raises a hand, and the teacher's page shows it;
  - the teacher puts the student on stage and allows the camera; the student turns it
    on, and the student's page shows the camera live;
  - the page draws with the terminal's JSON theme given to `homeroom web --theme`;
  - a refused action shows its code (the teacher mutes the other student's chat; that
    student's message is refused [muted]);
  - the teacher starts the class: every page's state bar shows the class running;
  - the teacher mutes every camera and switches hand raising off: every page's state
    bar says so, and a student's camera and hand are refused [device-muted] and
    [hand-raising-off]; lifting both clears it;
  - the teacher invites a student to the stage from the roster: the student (and no
    other) is asked on the page, accepts, and is on stage on the teacher's page;
  - private messages: the teacher whispers a student from the roster and the student
    answers from her page; each shows on the two pages, never on the other student's;
  - the teacher grants the board on the roster: the student's page says it is granted;
  - breakout groups: the teacher creates a group and moves a student into it; both
    pages list the group with the student; ending the groups clears them;
  - a refused teacher action shows its code (the stage limit is 1: a second student's
    seat is refused [stage-full]);
  - the teacher starts a carousel: the stage strip says when the next turn comes, on
    the teacher's page and the student's; stopping it clears that;
  - each scene (small classroom, lecture hall, one-to-one) is drawn, with a screenshot;
    the lecture hall pages its students (22 more join for it) and counts them;
  - the node the sessions are on is killed, and the pages reconnect through the other
    one and go on working (a reward made after the failover reaches the student);
  - the teacher kicks a student, whose page says so with the code [kicked];
  - the last node is killed too: the pages say every node failed and offer to log in
    again; logging in again (no node answers) shows the login form with [unavailable].
Every child (nodes, web, chromedriver, chromium) is stopped at the end, pass or fail.

Usage: python3 Tests/web/classroom_browser_test.py   (after `swift build --product homeroom`)
Environment: HOMEROOM_BIN (default .build/debug/homeroom), WEB_SCREENSHOTS (default
.build/web-screenshots), CHROMEDRIVER (default /usr/bin/chromedriver).
"""
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("HOMEROOM_BIN", os.path.join(ROOT, ".build/debug/homeroom"))
SHOTS = os.environ.get("WEB_SCREENSHOTS", os.path.join(ROOT, ".build/web-screenshots"))
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", shutil.which("chromedriver") or "/usr/bin/chromedriver")
ROOM = "maths"
WAIT_SECONDS = 20


class Failure(Exception):
    pass


class Children:
    """Child processes started by the test, all stopped by `stop_all`."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.processes = []

    def start(self, name, args):
        log = open(os.path.join(self.workdir, name + ".log"), "w")
        process = subprocess.Popen([BIN] + args, stdout=subprocess.PIPE, stderr=log, text=True)
        process.name = name
        self.processes.append(process)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 0.5)
            if ready:
                line = process.stdout.readline()
                if line.startswith("{") and '"ready"' in line:
                    return json.loads(line)
            if process.poll() is not None:
                break
        raise Failure(f"{name} did not become ready; its log:\n{self.log(name)}")

    def log(self, name):
        with open(os.path.join(self.workdir, name + ".log")) as file:
            return file.read()[-4000:]

    def kill(self, name):
        for process in self.processes:
            if process.name == name and process.poll() is None:
                process.kill()
                process.wait(10)

    def stop_all(self):
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def run(args):
    result = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise Failure(f"homeroom {' '.join(args)} failed: {result.stderr}")
    return result.stdout.strip()


class Page:
    """One browser page logged in as one user: its own chromedriver and Chromium."""

    def __init__(self, name, url, workdir):
        self.name = name
        self.url = url
        options = Options()
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1280,900", f"--user-data-dir={workdir}/chrome-{name}"]:
            options.add_argument(argument)
        self.service = Service(executable_path=CHROMEDRIVER, log_output=os.path.join(workdir, f"chromedriver-{name}.log"))
        self.driver = webdriver.Chrome(service=self.service, options=options)

    def log_in(self, token):
        self.driver.get(self.url)
        self.wait_for("#login-token", "the login form")
        self.driver.find_element(By.ID, "login-token").send_keys(token)
        self.driver.find_element(By.ID, "login-name").send_keys(self.name.capitalize())
        self.driver.find_element(By.ID, "login-button").click()
        self.wait_for('#connection[data-state="connected"]', "connected to the room")

    def wait_for(self, selector, what, text=None, timeout=WAIT_SECONDS):
        """Waits until `selector` matches (and, with `text`, its text contains it)."""
        def found(driver):
            # Read inside the page in one step: the page redraws on every read model, so an
            # element held across two WebDriver calls may be gone by the second.
            return driver.execute_script(
                "return Array.from(document.querySelectorAll(arguments[0]))"
                ".some((el) => arguments[1] === null || el.innerText.includes(arguments[1]));", selector, text)
        try:
            WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(found)
        except TimeoutException:
            self.screenshot(f"failure-{self.name}")
            body = self.driver.find_element(By.TAG_NAME, "body").text
            raise Failure(f"{self.name}'s page never showed {what} ({selector}{' with ' + repr(text) if text else ''}); "
                          f"the page says:\n{body}")

    def text(self, selector):
        return self.driver.execute_script("return document.querySelector(arguments[0])?.innerText ?? '';", selector)

    def attribute(self, selector, name):
        return self.driver.execute_script("return document.querySelector(arguments[0])?.getAttribute(arguments[1]);", selector, name)

    def click(self, selector, what):
        """Clicks the element once it is there (the page redraws on every read model)."""
        self.wait_for(selector, what)
        clicked = self.driver.execute_script(
            "const el = document.querySelector(arguments[0]); if (el) el.click(); return !!el;", selector)
        if not clicked:
            raise Failure(f"{self.name}: {what} ({selector}) went away before the click")

    def fill(self, element_id, value):
        """Types into an input as a user would (the page keeps the draft from the input event)."""
        self.driver.execute_script(
            "const el = document.getElementById(arguments[0]); el.value = arguments[1];"
            "el.dispatchEvent(new Event('input'));", element_id, value)

    def choose(self, selector, value, what):
        """Picks an option of a select (the page acts on its change event)."""
        self.wait_for(selector, what)
        chosen = self.driver.execute_script(
            "const el = document.querySelector(arguments[0]); if (!el) return false;"
            "el.value = arguments[1]; el.dispatchEvent(new Event('change')); return el.value === arguments[1];", selector, value)
        if not chosen:
            raise Failure(f"{self.name}: {what} ({selector}) has no option {value!r}")

    def lacks(self, selector, text, what, settle=1.0):
        """Fails if, after `settle` seconds, `selector`'s text contains `text`."""
        time.sleep(settle)
        if text in self.text(selector):
            raise Failure(f"{self.name}'s page shows {what}: {self.text(selector)!r}")

    def gone(self, selector, what, timeout=WAIT_SECONDS):
        """Waits until nothing matches `selector`."""
        try:
            WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(
                lambda driver: not driver.execute_script("return !!document.querySelector(arguments[0]);", selector))
        except TimeoutException:
            self.screenshot(f"failure-{self.name}")
            raise Failure(f"{self.name}'s page still shows {what} ({selector}): {self.text(selector)!r}")

    def say(self, text):
        self.driver.execute_script(
            "const input = document.getElementById('chat-input'); input.value = arguments[0];"
            "input.dispatchEvent(new Event('input')); document.getElementById('chat-send').click();", text)

    def screenshot(self, name):
        os.makedirs(SHOTS, exist_ok=True)
        path = os.path.join(SHOTS, name + ".png")
        self.driver.save_screenshot(path)
        return path

    def close(self):
        try:
            self.driver.quit()
        except WebDriverException:
            pass
        finally:
            # Chromium and chromedriver go even if quit failed.
            if self.service.process and self.service.process.poll() is None:
                self.service.process.kill()


def main():
    started = time.monotonic()
    # Only this run's screenshots in the end.
    os.makedirs(SHOTS, exist_ok=True)
    for old in os.listdir(SHOTS):
        if old.endswith(".png"):
            os.remove(os.path.join(SHOTS, old))
    workdir = tempfile.mkdtemp(prefix="homeroom-web-test-")
    children = Children(workdir)
    pages = []
    try:
        run(["keys", "generate", "--out", workdir])
        key, public = os.path.join(workdir, "token-signing.key"), os.path.join(workdir, "token-signing.pub")
        # The nodes speak TLS; the web process and the CLI trust the test's own authority.
        certificates = os.path.join(workdir, "tls")
        made = subprocess.run(["bash", os.path.join(ROOT, "Deploy/tls-certs.sh"), certificates], capture_output=True, text=True, timeout=60)
        if made.returncode != 0:
            raise Failure(f"Deploy/tls-certs.sh failed: {made.stderr}")
        authority = os.path.join(certificates, "ca.pem")
        tls = ["--tls-cert", os.path.join(certificates, "node.pem"), "--tls-key", os.path.join(certificates, "node.key"), "--tls-ca", authority]
        timing = ["--heartbeat-ms", "100", "--suspect-ms", "500", "--down-ms", "1500", "--token-key", public] + tls
        n1 = children.start("n1", ["node", "--name", "n1", "--listen", "tls+tcp://127.0.0.1:0", "--publish", "tls+tcp://127.0.0.1:0"] + timing)
        n2 = children.start("n2", ["node", "--name", "n2", "--listen", "tls+tcp://127.0.0.1:0", "--publish", "tls+tcp://127.0.0.1:0",
                                   "--seed", n1["listen"]] + timing)
        if not n1["listen"].startswith("tls+tcp://"):
            raise Failure(f"n1 does not listen on TLS: {n1['listen']}")
        # The terminal's theme format: the page draws a live camera with this glyph.
        theme = os.path.join(workdir, "theme.json")
        with open(theme, "w") as file:
            json.dump({"roster": {"camera": {"live": {"text": "◉ on air", "color": "green"}}}}, file)
        web = children.start("web", ["web", "--listen", "127.0.0.1:0", "--node", n1["listen"], "--node", n2["listen"], "--tls-ca", authority,
                                     "--theme", theme, "--reconnect-waits", "500,1000"])
        url = web["url"]
        # For the CLI commands below (`run`); set after the web process started, which has only its --tls-ca.
        os.environ["HOMEROOM_TLS_CA"] = authority
        print(f"web: {url}; nodes {n1['listen']}, {n2['listen']}", file=sys.stderr)

        def token(user, role):
            return run(["token", "create", "--key", key, "--room", ROOM, "--user", user, "--role", role])
        tokens = {"ada": token("ada", "teacher"), "ann": token("ann", "student"), "ben": token("ben", "student")}

        for name in ["ada", "ann", "ben"]:
            pages.append(Page(name, url, workdir))   # appended at once: closed in the end whatever follows
        teacher, ann, ben = pages
        for page in pages:
            page.log_in(tokens[page.name])
        teacher.wait_for('tr.roster-row[data-user="ann"]', "ann in the roster")
        teacher.wait_for('tr.roster-row[data-user="ben"]', "ben in the roster")
        if teacher.text("#connection").find("connected") < 0:
            raise Failure("the teacher's state bar does not say connected")

        # A hand goes up on the student's page; the teacher's page shows it.
        ann.click("#hand-button", "the raise-hand button")
        teacher.wait_for('#hands li[data-user="ann"]', "ann's raised hand")
        print("ok: ann's hand is up on the teacher's page", file=sys.stderr)

        # The teacher puts ann on stage and allows her camera; ann turns it on: live on her page.
        teacher.click('tr.roster-row[data-user="ann"] button[data-action="stage-on"]', "ann's on-stage button")
        ann.wait_for('#stage .seat[data-user="ann"]', "ann's own seat on the stage")
        teacher.click('tr.roster-row[data-user="ann"] button[data-action="allow-camera"]', "ann's allow-camera button")
        ann.wait_for('#my-streams[data-stage="on"]', "ann on stage in her controls")
        ann.click("#camera-button", "the camera button")
        ann.wait_for('#my-streams[data-camera="live"]', "ann's camera live on her page")
        ann.wait_for('#stage .seat[data-user="ann"][data-camera="live"]', "ann's seat with the camera live")
        teacher.wait_for('tr.roster-row[data-user="ann"] td.cam[data-state="live"]', "ann's camera live on the teacher's roster")
        teacher.wait_for('tr.roster-row[data-user="ann"] td.cam', "the theme's glyph for a live camera", text="◉ on air")
        print("ok: ann on stage with her camera live, on both pages", file=sys.stderr)

        # Chat, and a refusal with its code: the teacher mutes ben, whose message is refused.
        ann.say("hello from ann")
        teacher.wait_for("#chat-log li", "ann's chat message", text="hello from ann")
        teacher.click('tr.roster-row[data-user="ben"] button[data-action="mute"]', "ben's mute button")
        teacher.wait_for('tr.roster-row[data-user="ben"] button[data-action="unmute"]', "ben muted")
        ben.say("can I speak?")
        ben.wait_for("#notice.refused", "the refusal of ben's message", text="refused [muted]")
        if ben.driver.execute_script("return document.getElementById('chat-input').value;") != "can I speak?":
            raise Failure("ben's refused message was cleared from his chat box: he would have to type it again")
        print("ok: ben's message refused [muted], shown on his page", file=sys.stderr)

        # The class starts: the timer runs on every page.
        teacher.click("#class-start", "the start-class button")
        for page in pages:
            page.wait_for("#class-state", "the class running", text="in class")

        print("ok: class started on every page", file=sys.stderr)

        # Room-wide rules: the teacher mutes every camera and switches hand raising off;
        # each page says so, and a student's camera and hand are refused with the code.
        teacher.click("#room-mute-camera", "the mute-cameras button")
        teacher.click("#hand-raising", "the hands-off button")
        for page in pages:
            page.wait_for("#room-rules", "the room's rules in the state bar", text="cameras muted · hands off")
        ben.click("#camera-button", "ben's camera button")
        ben.wait_for("#notice.refused", "the refusal of ben's camera", text="refused [device-muted]")
        ben.click("#hand-button", "ben's hand button")
        ben.wait_for("#notice.refused", "the refusal of ben's hand", text="refused [hand-raising-off]")
        teacher.click("#room-mute-camera", "the unmute-cameras button")
        teacher.click("#hand-raising", "the hands-on button")
        for page in pages:
            page.gone("#room-rules", "the room's rules once lifted")
        print("ok: cameras muted and hands off on every page, ben refused [device-muted] and [hand-raising-off]", file=sys.stderr)

        # An invitation to the stage: the teacher invites ben from the roster; ben (and
        # only ben) is asked on his page, accepts, and is on stage on the teacher's page.
        teacher.click('tr.roster-row[data-user="ben"] button[data-action="invite"]', "ben's invite button")
        teacher.wait_for('#invitations li[data-user="ben"]', "ben's invitation on the teacher's page", text="Ben invited")
        ben.wait_for("#invitations li.mine", "ben's invitation on his page", text="invites you on stage")
        ann.lacks("#scene", "invites you", "an invitation meant for ben")
        ben.click("#invitation-accept", "ben's accept button")
        teacher.wait_for('#stage .seat[data-user="ben"]', "ben's seat on the stage after his accept")
        ben.gone("#invitations", "ben's answered invitation")
        teacher.click('tr.roster-row[data-user="ben"] button[data-action="stage-off"]', "ben's off-stage button")
        teacher.gone('#stage .seat[data-user="ben"]', "ben's seat once he is off stage")
        print("ok: ben invited, asked on his page only, accepted, on stage, then off again", file=sys.stderr)

        # Private messages: the teacher whispers ann from the roster; ann answers from her
        # page. Each is on its two pages only: never on ben's.
        teacher.click('tr.roster-row[data-user="ann"] button[data-action="whisper"]', "ann's whisper button")
        teacher.wait_for('#peer-to option[value="ann"]', "ann among the recipients")
        if teacher.driver.execute_script("return document.getElementById('peer-to').value;") != "ann":
            raise Failure("the whisper button did not pick ann in the private messages' form")
        teacher.fill("peer-input", "see me after class")
        teacher.click("#peer-send", "the private message's send button")
        ann.wait_for("#peer-log li.received", "the teacher's whisper", text="Ada → you: see me after class")
        teacher.wait_for("#peer-log li.sent", "the whisper the teacher sent", text="you → Ann: see me after class")
        ann.choose("#peer-to", "ada", "the recipients")
        ann.fill("peer-input", "I will come")
        ann.click("#peer-send", "the private message's send button")
        teacher.wait_for("#peer-log li.received", "ann's answer", text="Ann → you: I will come")
        ben.lacks("#whispers", "see me after class", "a whisper meant for ann")
        ben.lacks("#whispers", "I will come", "a whisper meant for the teacher", settle=0)
        if "see me after class" in ben.text("#chat-log") or "see me after class" in teacher.text("#chat-log"):
            raise Failure("a whisper shows in the room's chat")
        print("ok: whispers on their two pages only", file=sys.stderr)

        # The board: granted on the teacher's roster, shown on ann's page.
        teacher.click('tr.roster-row[data-user="ann"] button[data-action="board-grant"]', "ann's board button")
        ann.wait_for('#my-streams[data-board="granted"]', "the board granted on ann's page", text="board granted")
        teacher.wait_for('tr.roster-row[data-user="ann"] button[data-action="board-revoke"]', "ann's board granted on the roster")
        print("ok: board granted, shown on ann's page", file=sys.stderr)

        # Breakout groups: created on the teacher's page, ann moved in from her roster row.
        teacher.fill("group-id", "g1")
        teacher.fill("group-name", "Fractions")
        teacher.click("#group-create-button", "the create-group button")
        teacher.wait_for('#group-list li[data-group="g1"]', "the new group", text="g1 Fractions (0)")
        teacher.choose('tr.roster-row[data-user="ann"] select[data-action="group-move"]', "g1", "ann's group choice")
        for page in [teacher, ann]:
            page.wait_for('#group-list li[data-group="g1"]', "ann in group g1", text="g1 Fractions (1): Ann")
        ann.wait_for('#my-group[data-group="g1"]', "ann told where her group meets", text=f"room {ROOM}:g1")
        teacher.wait_for('tr.roster-row[data-user="ann"] td.name', "ann's group tag on the roster", text="[g1]")
        teacher.screenshot("groups-teacher")
        ann.screenshot("groups-student")
        teacher.click("#group-end", "the end-all-groups button")
        ann.gone("#groups", "the ended groups")
        print("ok: group g1 with ann on both pages, then ended", file=sys.stderr)

        # A refusal with its code: one seat, ann's on it; ben's is refused [stage-full].
        run(["room", "stage-limit", "1", "--room", ROOM, "--node", n2["listen"], "--token", tokens["ada"]])
        teacher.wait_for("#stage h2", "a stage of one seat", text="1/1")
        teacher.click('tr.roster-row[data-user="ben"] button[data-action="stage-on"]', "ben's on-stage button")
        teacher.wait_for("#notice.refused", "the refusal of ben's seat", text="refused [stage-full]")
        print("ok: ben's seat refused [stage-full], shown on the teacher's page", file=sys.stderr)

        # The carousel: two students, one seat, so it rotates; the strip counts down to the next turn.
        teacher.fill("carousel-seconds", "10")
        teacher.click("#carousel-start-button", "the start-carousel button")
        for page in [teacher, ann]:
            page.wait_for("#carousel", "the carousel's next turn", text="Carousel every 10 s, all, join order · next turn in 0:")
        teacher.screenshot("carousel-teacher")
        teacher.click("#carousel-stop", "the stop-carousel button")
        ann.gone("#carousel", "the stopped carousel")
        run(["room", "stage-limit", "6", "--room", ROOM, "--node", n2["listen"], "--token", tokens["ada"]])
        print("ok: carousel's next turn on both pages, then stopped", file=sys.stderr)

        # The lecture hall pages its students: 22 more join (each turns its camera on once).
        def join_student(user):
            student = token(user, "student")
            return subprocess.Popen([BIN, "camera", "on", "--room", ROOM, "--node", n2["listen"], "--token", student],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        extra = [f"s{number:02d}" for number in range(1, 23)]
        for batch in range(0, len(extra), 8):
            joining = [join_student(user) for user in extra[batch:batch + 8]]
            for process in joining:
                _, error = process.communicate(timeout=30)
                if process.returncode != 0:
                    raise Failure(f"a student could not join for the lecture hall: {error}")

        # Each scene, drawn from the same read model: the room type decides.
        teacher.screenshot("small-classroom-teacher")
        ann.screenshot("small-classroom-student")
        for scene in ["lecture-hall", "one-to-one"]:
            run(["room", "type", scene, "--room", ROOM, "--node", n2["listen"], "--token", tokens["ada"]])
            teacher.wait_for(f'#scene[data-scene="{scene}"]', f"the {scene} scene")
            if scene == "lecture-hall":
                teacher.wait_for("#count-students", "the lecture hall's counts", text="24 students")
                teacher.wait_for("#page-label", "the first page of students", text="page 1 of 2 · 24 students")
                teacher.screenshot("lecture-hall-teacher-page-1")
                teacher.click("#pager button:last-child", "the next-page button")
                teacher.wait_for("#page-label", "the second page of students", text="page 2 of 2")
                teacher.screenshot("lecture-hall-teacher-page-2")
                teacher.click("#pager button:first-child", "the previous-page button")
                teacher.wait_for("#page-label", "the first page again", text="page 1 of 2")
            ann.wait_for(f'#scene[data-scene="{scene}"]', f"the {scene} scene")
            teacher.screenshot(f"{scene}-teacher")
            ann.screenshot(f"{scene}-student")
        run(["room", "type", "small-classroom", "--room", ROOM, "--node", n2["listen"], "--token", tokens["ada"]])
        teacher.wait_for('#scene[data-scene="small-classroom"]', "the small classroom again")
        print("ok: scenes drawn: small classroom, lecture hall, one-to-one", file=sys.stderr)

        # Failover: kill the node the sessions are on; the pages come back through the other.
        before = teacher.attribute("#connection", "data-node")
        victim = "n1" if before == n1["listen"] else "n2"
        survivor = n2["listen"] if victim == "n1" else n1["listen"]
        children.kill(victim)
        print(f"killed {victim} ({before}); waiting for {survivor}", file=sys.stderr)
        for page in pages:
            page.wait_for(f'#connection[data-state="connected"][data-node="{survivor}"]', f"connected through {survivor}", timeout=45)
        teacher.click('tr.roster-row[data-user="ann"] button[data-action="reward"]', "ann's reward button")
        ann.wait_for('#my-streams', "ann's reward after the failover", text="rewards 1")
        teacher.screenshot("after-failover-teacher")
        print("ok: every page reconnected through the surviving node, and acts", file=sys.stderr)

        # A kick: the student's page says so, with the code. (Ben is on the second page of 24.)
        teacher.click("#pager button:last-child", "the next-page button")
        teacher.click('tr.roster-row[data-user="ben"] button[data-action="kick"]', "ben's kick button")
        ben.wait_for("#notice.refused", "ben's removal", text="[kicked]")
        ben.screenshot("kicked-student")
        print("ok: ben kicked, and his page says [kicked]", file=sys.stderr)

        # Every node gone: the pages say so and offer a new login, which tells why it fails.
        children.kill("n2" if victim == "n1" else "n1")
        for page in [teacher, ann]:
            page.wait_for("#link-lost", "that every node failed", text="every node failed", timeout=30)
        teacher.screenshot("every-node-failed-teacher")
        # Past the (short) backoff: suspended, still trying, and the page says so.
        teacher.wait_for('#link-lost[data-state="suspended"][data-reason="backoff-spent"]', "the suspended link", timeout=30)
        teacher.wait_for('#connection[data-state="suspended"]', "the state bar's suspended link")
        teacher.screenshot("suspended-teacher")
        teacher.click("#relogin", "the log-in-again button")
        teacher.wait_for("#login-error", "why the new login failed", text="[unavailable]")
        if not teacher.driver.execute_script("return document.getElementById('login-token').value;").startswith("hr1."):
            raise Failure("the login form after a failed login does not keep the token to try again")
        print("ok: every node failed: the pages say so; logging in again shows [unavailable]", file=sys.stderr)
        print(f"classroom browser test: passed in {time.monotonic() - started:.1f} s; screenshots in {SHOTS}")
        return 0
    except (Failure, WebDriverException, subprocess.SubprocessError, OSError) as failure:
        print(f"classroom browser test: FAILED: {failure}", file=sys.stderr)
        for name in ["web", "n1", "n2"]:
            try:
                print(f"--- {name} log (tail):\n{children.log(name)}", file=sys.stderr)
            except OSError:
                pass
        return 1
    finally:
        for page in pages:
            page.close()
        children.stop_all()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
