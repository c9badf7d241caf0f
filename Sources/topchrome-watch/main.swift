// `topchrome watch`: kept tiny on purpose (code here is main-actor isolated);
// everything runs in `Watch`.
await Watch.run()
