"""What the exec check's sandbox tests share (conftest.py's ``fake_git`` fixture writes it)."""

# a stand-in for git: whatever it is asked, it leaves the marker
FAKE_GIT = """#!/bin/sh
echo "$*" >> "$MARK"
echo "fake git ran: $*"
"""
