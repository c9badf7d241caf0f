// TopChromeFuzz: libFuzzer targets for everything in TopChrome that reads
// untrusted bytes. Kept tiny on purpose (top-level code here is main-actor
// isolated); the driver and the targets live in the other files.
//
//   TopChromeFuzz TARGET [libFuzzer flags] [CORPUS_DIR...]   (built with -DFUZZING)
//   TopChromeFuzz TARGET FILE_OR_DIR...                      (plain build: replays the inputs)
//
// See Driver.swift for the targets and Tests/scripts/fuzz.sh for how to run them.
FuzzDriver.main()
