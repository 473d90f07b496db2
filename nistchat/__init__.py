"""NISTChat: cited, checked answers from seven NIST AI publications, served on an office LAN.

`nistchat.engine` is the Flask-free pipeline (`from nistchat.engine import Runtime`);
`nistchat.app.create_app` builds the web app. Importing this package loads neither.
"""
