extension PageAssets {
    static let indexHTML = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Homeroom</title>
<link rel="stylesheet" href="/style.css">
<script type="module" src="/js/app.js"></script>
</head>
<body>
<main id="app">
  <form id="login" class="login" autocomplete="off">
    <h1>Homeroom</h1>
    <p>Paste the join token <code>homeroom token create</code> printed for you.</p>
    <label>Join token <textarea id="login-token" rows="3" required></textarea></label>
    <label>Room <input id="login-room" placeholder="only for a token of every room"></label>
    <label>Display name <input id="login-name" placeholder="optional"></label>
    <button id="login-button" type="submit">Join the class</button>
    <p id="login-error" class="error" role="alert"></p>
  </form>
</main>
</body>
</html>
"""#
}
