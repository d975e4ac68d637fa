"""The local edge: what CloudFront does to a request (pure), and `serve`, the server around it."""
