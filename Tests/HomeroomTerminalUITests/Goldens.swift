/// Expected outputs for GoldenTests, as `Golden.visible` shows them: "␛" is ESC,
/// "␠" a trailing space. Regenerate: HOMEROOM_GOLDEN_DIR=/tmp/goldens swift test --filter GoldenTests,
/// review the files, and paste them here (one raw string per file, keyed by its name).
enum Goldens {
    static let expected: [String: String] = [
        "lecture-hall-color": #"""
        ␛[1;97;44m Physics for everyone␛[0m␛[97;44m   in class 12:03 · 32:57 left␛[0m␛[97;44m           ␛[0m␛[97;44mconnected ␛[0m

        students 250 · online 263 · observers 12 · on stage 3/6 · hands 10

        ␛[1mTeacher␛[0m  ␛[1;36mAda Lovelace (you)␛[0m  camera ␛[90m·␛[0m  mic ␛[90m·␛[0m

        ␛[1mStage 3/6␛[0m  ␛[32mStudent 1␛[0m · ␛[32mStudent 2␛[0m · ␛[32mStudent 3␛[0m

        ␛[1mHands 10␛[0m  ␛[33mStudent 10␛[0m · ␛[33mStudent 20␛[0m␛[2m  +8 more␛[0m␛[2m  (15 waiting over the limit)␛[0m

        ␛[1mName      ␛[0m  ␛[1mStage␛[0m  ␛[1mAuth␛[0m  ␛[1mCamera␛[0m  ␛[1mMic␛[0m  ␛[1mRewards␛[0m
        Student 11  ␛[90m-    ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·  ␛[0m  ␛[33m      3␛[0m
        Student 12  ␛[90m-    ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·  ␛[0m        0
        Student 13  ␛[90m-    ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·  ␛[0m  ␛[33m      1␛[0m
        Student 14  ␛[90m-    ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·  ␛[0m  ␛[33m      2␛[0m
        Student 15  ␛[90m-    ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·  ␛[0m  ␛[33m      3␛[0m
        ␛[2mcam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…␛[0m
        ␛[2mpage 3/50 · students 11–15 of 250␛[0m
        """#,
        "lecture-hall-plain": #"""
         Physics for everyone   in class 12:03 · 32:57 left           connected

        students 250 · online 263 · observers 12 · on stage 3/6 · hands 10

        Teacher  Ada Lovelace (you)  camera ·  mic ·

        Stage 3/6  Student 1 · Student 2 · Student 3

        Hands 10  Student 10 · Student 20  +8 more  (15 waiting over the limit)

        Name        Stage  Auth  Camera  Mic  Rewards
        Student 11  -      -     ·       ·          3
        Student 12  -      -     ·       ·          0
        Student 13  -      -     ·       ·          1
        Student 14  -      -     ·       ·          2
        Student 15  -      -     ·       ·          3
        cam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…
        page 3/50 · students 11–15 of 250
        """#,
        "offline-small-classroom-color": #"""
        ␛[1;97;44m Maths 101␛[0m␛[97;44m   in class 12:03 · 32:57 left␛[0m␛[97;44m            ␛[0m␛[97;44mconnected · 0.42 ms ␛[0m

        ␛[1mTeacher␛[0m  ␛[2;90mAda Lovelace (offline)␛[0m  camera ␛[90m○ off␛[0m  mic ␛[90m○ off␛[0m
        ␛[1mAssistants␛[0m  ␛[32mTom␛[0m · ␛[2;90mKim (offline)␛[0m

        ␛[1mStage 3/6␛[0m  ␛[32mAda Lovelace␛[0m · ␛[32mAlice␛[0m · ␛[32mEve␛[0m

        ␛[1mHands 0␛[0m  ␛[2mno hands up␛[0m

        ␛[1mName         ␛[0m  ␛[1mStage␛[0m  ␛[1mAuth␛[0m  ␛[1mCamera␛[0m  ␛[1mMic   ␛[0m  ␛[1mRewards␛[0m
        Alice          ␛[32mon   ␛[0m  ␛[90m-   ␛[0m  ␛[34m● live␛[0m  ␛[34m● live␛[0m        0
        ␛[1;36mBob (you)    ␛[0m  ␛[90m-    ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·     ␛[0m        0
        ␛[2;90mEve (offline)␛[0m  ␛[2;90mon   ␛[0m  ␛[2;90m-   ␛[0m  ␛[2;90m○ off ␛[0m  ␛[2;90m○ off ␛[0m  ␛[2;90m      2␛[0m
        ␛[2mcam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…␛[0m
        """#,
        "offline-small-classroom-plain": #"""
         Maths 101   in class 12:03 · 32:57 left            connected · 0.42 ms

        Teacher  Ada Lovelace (offline)  camera ○ off  mic ○ off
        Assistants  Tom · Kim (offline)

        Stage 3/6  Ada Lovelace · Alice · Eve

        Hands 0  no hands up

        Name           Stage  Auth  Camera  Mic     Rewards
        Alice          on     -     ● live  ● live        0
        Bob (you)      -      -     ·       ·             0
        Eve (offline)  on     -     ○ off   ○ off         2
        cam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…
        """#,
        "one-to-one-color": #"""
        ␛[1;97;44m Piano lesson␛[0m␛[97;44m   in class 12:03 · 32:57 left␛[0m␛[97;44m         ␛[0m␛[97;44mconnected · 0.42 ms ␛[0m

        ␛[90m┌─␛[0m␛[1m Teacher ␛[0m␛[90m───────────────────────┐␛[0m ␛[90m┌─␛[0m␛[1m Student ␛[0m␛[90m───────────────────────┐␛[0m
        ␛[90m│ ␛[0m␛[1mAda Lovelace␛[0m                   ␛[90m │␛[0m ␛[90m│ ␛[0m␛[1;36mBob Marley (you)␛[0m               ␛[90m │␛[0m
        ␛[90m│ ␛[0monline                         ␛[90m │␛[0m ␛[90m│ ␛[0monline                         ␛[90m │␛[0m
        ␛[90m│ ␛[0mCamera  ␛[34m● live␛[0m                 ␛[90m │␛[0m ␛[90m│ ␛[0mCamera  ␛[31m◐ held␛[0m                 ␛[90m │␛[0m
        ␛[90m│ ␛[0mMic     ␛[34m● live␛[0m                 ␛[90m │␛[0m ␛[90m│ ␛[0mMic     ␛[90m○ off␛[0m                  ␛[90m │␛[0m
        ␛[90m│ ␛[0mAuth    ␛[90m-␛[0m                      ␛[90m │␛[0m ␛[90m│ ␛[0mAuth    ␛[32myes␛[0m                    ␛[90m │␛[0m
        ␛[90m│ ␛[0mRewards 0                      ␛[90m │␛[0m ␛[90m│ ␛[0mRewards ␛[33m2␛[0m                      ␛[90m │␛[0m
        ␛[90m│ ␛[0mHand    ␛[90m-␛[0m                      ␛[90m │␛[0m ␛[90m│ ␛[0mHand    ␛[33mup␛[0m                     ␛[90m │␛[0m
        ␛[90m└─────────────────────────────────┘␛[0m ␛[90m└─────────────────────────────────┘␛[0m

        ␛[1mAssistant␛[0m  ␛[32mTom␛[0m

        ␛[1mHands 1␛[0m  ␛[33mBob Marley␛[0m
        """#,
        "one-to-one-plain": #"""
         Piano lesson   in class 12:03 · 32:57 left         connected · 0.42 ms

        ┌─ Teacher ───────────────────────┐ ┌─ Student ───────────────────────┐
        │ Ada Lovelace                    │ │ Bob Marley (you)                │
        │ online                          │ │ online                          │
        │ Camera  ● live                  │ │ Camera  ◐ held                  │
        │ Mic     ● live                  │ │ Mic     ○ off                   │
        │ Auth    -                       │ │ Auth    yes                     │
        │ Rewards 0                       │ │ Rewards 2                       │
        │ Hand    -                       │ │ Hand    up                      │
        └─────────────────────────────────┘ └─────────────────────────────────┘

        Assistant  Tom

        Hands 1  Bob Marley
        """#,
        "small-classroom-color": #"""
        ␛[1;97;44m Maths 101␛[0m␛[97;44m   in class 12:03 · 32:57 left␛[0m␛[97;44m            ␛[0m␛[97;44mconnected · 0.42 ms ␛[0m

        ␛[1mTeacher␛[0m  ␛[1;36mAda Lovelace (you)␛[0m  camera ␛[90m·␛[0m  mic ␛[90m·␛[0m

        ␛[1mStage 2/2␛[0m  ␛[32mAlice␛[0m · ␛[32mBob␛[0m
        ␛[1mWaiting for a seat␛[0m  ␛[33mCarol␛[0m

        ␛[1mHands 2␛[0m  ␛[33mCarol␛[0m · ␛[33m李雷␛[0m

        ␛[1mName          ␛[0m  ␛[1mStage  ␛[0m  ␛[1mAuth␛[0m  ␛[1mCamera␛[0m  ␛[1mMic   ␛[0m  ␛[1mRewards␛[0m
        Alice           ␛[32mon     ␛[0m  ␛[32myes ␛[0m  ␛[34m● live␛[0m  ␛[31m◐ held␛[0m  ␛[33m      3␛[0m
        Bob             ␛[32mon     ␛[0m  ␛[90m-   ␛[0m  ␛[90m○ off ␛[0m  ␛[34m● live␛[0m  ␛[33m      1␛[0m
        Carol           ␛[33mwaiting␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·     ␛[0m        0
        李雷            ␛[90m-      ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·     ␛[0m  ␛[33m     12␛[0m
        ␛[2;90mDave (offline)␛[0m  ␛[2;90m-      ␛[0m  ␛[2;90m-   ␛[0m  ␛[2;90m·     ␛[0m  ␛[2;90m·     ␛[0m  ␛[2;90m      0␛[0m
        ␛[2mcam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…␛[0m

        ␛[90mok: carol on stage␛[0m
        """#,
        "small-classroom-plain": #"""
         Maths 101   in class 12:03 · 32:57 left            connected · 0.42 ms

        Teacher  Ada Lovelace (you)  camera ·  mic ·

        Stage 2/2  Alice · Bob
        Waiting for a seat  Carol

        Hands 2  Carol · 李雷

        Name            Stage    Auth  Camera  Mic     Rewards
        Alice           on       yes   ● live  ◐ held        3
        Bob             on       -     ○ off   ● live        1
        Carol           waiting  -     ·       ·             0
        李雷            -        -     ·       ·            12
        Dave (offline)  -        -     ·       ·             0
        cam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…

        ok: carol on stage
        """#,
        "stream-device-off-color": #"""
        ␛[1mName ␛[0m  ␛[1mStage␛[0m  ␛[1mAuth␛[0m  ␛[1mCamera␛[0m  ␛[1mMic  ␛[0m  ␛[1mRewards␛[0m
        Alice  ␛[32mon   ␛[0m  ␛[90m-   ␛[0m  ␛[90m○ off ␛[0m  ␛[90m○ off␛[0m        0
        ␛[2mcam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…␛[0m
        """#,
        "stream-device-off-plain": #"""
        Name   Stage  Auth  Camera  Mic    Rewards
        Alice  on     -     ○ off   ○ off        0
        cam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…
        """#,
        "stream-inoperable-color": #"""
        ␛[1mName ␛[0m  ␛[1mStage␛[0m  ␛[1mAuth␛[0m  ␛[1mCamera␛[0m  ␛[1mMic␛[0m  ␛[1mRewards␛[0m
        Alice  ␛[90m-    ␛[0m  ␛[90m-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m·  ␛[0m        0
        ␛[2mcam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…␛[0m
        """#,
        "stream-inoperable-plain": #"""
        Name   Stage  Auth  Camera  Mic  Rewards
        Alice  -      -     ·       ·          0
        cam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…
        """#,
        "stream-live-color": #"""
        ␛[1mName ␛[0m  ␛[1mStage␛[0m  ␛[1mAuth␛[0m  ␛[1mCamera␛[0m  ␛[1mMic   ␛[0m  ␛[1mRewards␛[0m
        Alice  ␛[32mon   ␛[0m  ␛[90m-   ␛[0m  ␛[34m● live␛[0m  ␛[34m● live␛[0m        0
        ␛[2mcam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…␛[0m
        """#,
        "stream-live-plain": #"""
        Name   Stage  Auth  Camera  Mic     Rewards
        Alice  on     -     ● live  ● live        0
        cam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…
        """#,
        "stream-privilege-off-color": #"""
        ␛[1mName ␛[0m  ␛[1mStage␛[0m  ␛[1mAuth␛[0m  ␛[1mCamera␛[0m  ␛[1mMic   ␛[0m  ␛[1mRewards␛[0m
        Alice  ␛[32mon   ␛[0m  ␛[90m-   ␛[0m  ␛[31m◐ held␛[0m  ␛[31m◐ held␛[0m        0
        ␛[2mcam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…␛[0m
        """#,
        "stream-privilege-off-plain": #"""
        Name   Stage  Auth  Camera  Mic     Rewards
        Alice  on     -     ◐ held  ◐ held        0
        cam/mic ● live  ◐ held (privilege-off)  ○ off (device-off)  · (inoperab…
        """#,
        "themed-small-classroom-color": #"""
        ␛[1;30;46m Maths 101␛[0m␛[30;46m   in class 12:03 · 32:57 left␛[0m␛[30;46m            ␛[0m␛[30;46mconnected · 0.42 ms ␛[0m

        ␛[1mTeacher␛[0m  ␛[1;36mAda Lovelace (you)␛[0m  camera ␛[38;2;226;226;238mcam-␛[0m  mic ␛[90m·␛[0m

        ␛[1mStage 2/2␛[0m  ␛[32mAlice␛[0m · ␛[32mBob␛[0m
        ␛[1mWaiting for a seat␛[0m  ␛[33mCarol␛[0m

        ␛[1mHands 2␛[0m  ␛[33mCarol␛[0m · ␛[33m李雷␛[0m

        ␛[1mName          ␛[0m  ␛[1mCamera ␛[0m  ␛[1mMic   ␛[0m  ␛[1mStage  ␛[0m  ␛[1mRewards␛[0m
        Alice           ␛[38;2;0;115;255mcam on ␛[0m  ␛[31m◐ held␛[0m  ␛[32mon     ␛[0m  ␛[33m      3␛[0m
        Bob             ␛[38;2;226;226;238mcam off␛[0m  ␛[34m● live␛[0m  ␛[32mon     ␛[0m  ␛[33m      1␛[0m
        Carol           ␛[38;2;226;226;238mcam-   ␛[0m  ␛[90m·     ␛[0m  ␛[33mwaiting␛[0m        0
        李雷            ␛[38;2;226;226;238mcam-   ␛[0m  ␛[90m·     ␛[0m  ␛[90m-      ␛[0m  ␛[33m     12␛[0m
        ␛[2;90mDave (offline)␛[0m  ␛[2;90mcam-   ␛[0m  ␛[2;90m·     ␛[0m  ␛[2;90m-      ␛[0m  ␛[2;90m      0␛[0m
        ␛[2mcam/mic cam on (live)  cam off (privilege-off)  cam off (device-off)  c…␛[0m
        """#,
        "themed-small-classroom-plain": #"""
         Maths 101   in class 12:03 · 32:57 left            connected · 0.42 ms

        Teacher  Ada Lovelace (you)  camera cam-  mic ·

        Stage 2/2  Alice · Bob
        Waiting for a seat  Carol

        Hands 2  Carol · 李雷

        Name            Camera   Mic     Stage    Rewards
        Alice           cam on   ◐ held  on             3
        Bob             cam off  ● live  on             1
        Carol           cam-     ·       waiting        0
        李雷            cam-     ·       -             12
        Dave (offline)  cam-     ·       -              0
        cam/mic cam on (live)  cam off (privilege-off)  cam off (device-off)  c…
        """#,
        "state-bar-suspended-plain": #"""
         Maths 101 · small classroom   in class 12:03 · 32:57 left    suspended
        """#,
        "state-bar-suspended-color": #"""
        ␛[1;97;44m Maths 101 · small classroom␛[0m␛[97;44m   in class 12:03 · 32:57 left␛[0m␛[97;44m    ␛[0m␛[1;97;44msuspended ␛[0m
        """#,
    ]
}
