#!/usr/bin/python3
"""A fake RTSP camera for Vigil's tests and benchmarks: GStreamer's RTSP server on 127.0.0.1.

Run it with Debian's /usr/bin/python3 (it needs python3-gi and gir1.2-gst-rtsp-server-1.0):

    rtsp-camera.py --port 0 --mount /cam=motion --mount /garage=still \
        --width 640 --height 360 --fps 15 [--username user --password pass]

Protocol with the parent process (line based, UTF-8):
  stdout: one `READY <port>` line once the server listens, then `OK <command>` for each command handled.
  stdin:  `pattern <mount> <still|motion>` switches the live picture of a mount. An unknown command or mount is
          answered with `ERR <command>: <reason>`. End of stdin stops the server, so it never outlives its parent.
SIGTERM and SIGINT stop it too; it exits with status 0.
"""

import argparse
import os
import signal
import sys
import threading

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402

# `still` must produce identical frames (motion detection sees nothing); `motion` a moving ball on black.
PATTERNS = {"still": "black", "motion": "ball"}
ROLE = "camera-user"


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Fake RTSP camera (GStreamer RTSP server)")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one")
    parser.add_argument(
        "--mount",
        action="append",
        default=[],
        metavar="PATH[=still|motion]",
        help="mount path with an optional initial pattern; repeatable (default /cam)",
    )
    parser.add_argument("--pattern", choices=sorted(PATTERNS), default="motion", help="default initial pattern")
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=360)
    parser.add_argument("--fps", type=int, default=15)
    parser.add_argument("--username")
    parser.add_argument("--password")
    args = parser.parse_args(argv)
    if (args.username is None) != (args.password is None):
        parser.error("--username and --password go together")
    mounts = {}
    for spec in args.mount or ["/cam"]:
        path, _, pattern = spec.partition("=")
        pattern = pattern or args.pattern
        if not path.startswith("/"):
            parser.error(f"mount path must start with '/': {path}")
        if pattern not in PATTERNS:
            parser.error(f"unknown pattern for {path}: {pattern}")
        mounts[path] = pattern
    args.mounts = mounts
    return args


class Mount:
    """One mount's wanted pattern and the videotestsrc elements of its live pipelines."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.sources = set()
        self.lock = threading.Lock()

    def set_pattern(self, pattern):
        with self.lock:
            self.pattern = pattern
            sources = list(self.sources)
        for source in sources:
            Gst.util_set_object_arg(source, "pattern", PATTERNS[pattern])

    def on_media_configure(self, _factory, media):
        # A new pipeline starts in the last requested pattern, even if no client has connected before.
        source = media.get_element().get_by_name("src")
        with self.lock:
            Gst.util_set_object_arg(source, "pattern", PATTERNS[self.pattern])
            self.sources.add(source)
        media.connect("unprepared", self.on_media_unprepared, source)

    def on_media_unprepared(self, _media, source):
        with self.lock:
            self.sources.discard(source)


def launch_line(args):
    caps = f"video/x-raw,width={args.width},height={args.height},framerate={args.fps}/1"
    return (
        f"( videotestsrc is-live=true pattern=ball name=src ! {caps} ! videoconvert"
        f" ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max={args.fps}"
        " ! rtph264pay name=pay0 pt=96 config-interval=-1 )"
    )


def make_auth(username, password):
    # No default token: a client without valid credentials gets no role and the server answers 401.
    token = GstRtspServer.RTSPToken()
    token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, ROLE)
    auth = GstRtspServer.RTSPAuth()
    auth.set_realm("Fake Camera")
    auth.add_basic(GstRtspServer.RTSPAuth.make_basic(username, password), token)
    return auth


def make_permissions():
    permissions = GstRtspServer.RTSPPermissions()
    permissions.add_permission_for_role(ROLE, GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
    permissions.add_permission_for_role(ROLE, GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
    return permissions


def reply(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def handle_command(line, mounts):
    parts = line.split()
    if len(parts) == 3 and parts[0] == "pattern":
        _, path, pattern = parts
        if path not in mounts:
            return f"ERR {line}: unknown mount"
        if pattern not in PATTERNS:
            return f"ERR {line}: unknown pattern"
        mounts[path].set_pattern(pattern)
        return f"OK {line}"
    return f"ERR {line}: unknown command"


def main(argv):
    args = parse_args(argv)
    Gst.init(None)
    loop = GLib.MainLoop()

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    auth = make_auth(args.username, args.password) if args.username is not None else None
    if auth:
        server.set_auth(auth)

    mounts = {}
    mount_points = server.get_mount_points()
    for path, pattern in args.mounts.items():
        mount = Mount(pattern)
        factory = GstRtspServer.RTSPMediaFactory()
        factory.set_launch(launch_line(args))
        factory.set_shared(True)  # all clients of a mount watch one pipeline, so a pattern switch reaches them all
        factory.connect("media-configure", mount.on_media_configure)
        if auth:
            factory.set_permissions(make_permissions())
        mount_points.add_factory(path, factory)
        mounts[path] = mount

    # create_source reports a port in use as an error; attach() would only return 0.
    try:
        server.create_source(None).attach(None)
    except GLib.Error as error:
        sys.stderr.write(f"cannot listen on 127.0.0.1:{args.port}: {error.message}\n")
        return 1

    def stop(*_):
        loop.quit()
        return GLib.SOURCE_REMOVE

    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, stop)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, stop)

    stdin = GLib.IOChannel.unix_new(sys.stdin.fileno())

    def on_stdin(channel, condition):
        if condition & GLib.IOCondition.IN:
            status, line, _, _ = channel.read_line()
            if status == GLib.IOStatus.NORMAL:
                line = line.strip()
                if line:
                    reply(handle_command(line, mounts))
                return GLib.SOURCE_CONTINUE
            if status == GLib.IOStatus.AGAIN:
                return GLib.SOURCE_CONTINUE
        loop.quit()  # end of input: the parent is gone or done with us
        return GLib.SOURCE_REMOVE

    GLib.io_add_watch(stdin, GLib.PRIORITY_DEFAULT, GLib.IOCondition.IN | GLib.IOCondition.HUP, on_stdin)

    reply(f"READY {server.get_bound_port()}")
    loop.run()
    return 0


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without tearing down live pipelines: their streaming threads can block interpreter shutdown.
    os._exit(status)
