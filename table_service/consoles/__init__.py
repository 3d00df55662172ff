"""Web consoles: dealer, pit supervisor, studio overlay and regulator recall pages."""
