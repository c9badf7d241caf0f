/// `GET /`: a page that shows what the service does. Its island hides and
/// shows from the service's own state (an event stream), while the page
/// reports its scrolling; a horizontal row reports too, and must not bring
/// the island back. Self-contained: no external assets.
let demoPage = #"""
<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>TopChrome</title></head>
<body><p>TopChrome demo page: see README.</p></body>
</html>
"""#
