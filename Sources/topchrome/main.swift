// Kept tiny on purpose: code here is main-actor isolated, and libmicrohttpd
// calls back from its own threads. Everything runs in `Launcher`.
Launcher.run()
