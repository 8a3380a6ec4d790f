#!/usr/bin/env bash
# Browser tests drive Debian's chromium through Playwright. Install it when it is missing and we can.
set -u
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure_chromium: installing Debian's chromium (browser tests need it)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get install -y -qq chromium >/dev/null 2>&1 || echo "ensure_chromium: apt-get install chromium failed"
fi
if [ -x /usr/bin/chromium ]; then
  echo "ensure_chromium: $(/usr/bin/chromium --version 2>/dev/null)"
else
  echo "ensure_chromium: no chromium; browser tests will skip (and fail under CI=true)"
fi
exit 0
