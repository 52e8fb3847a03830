/* A prototype gt shim in C (issue 40): the relay protocol of agent/shim
 * and tunnel/wire/relay.go, to measure what a client that starts in less
 * than a Go program's time leaves above the relay's floor. Not the
 * product: the request's JSON is written by hand, the exit status is read
 * with strstr, signals are forwarded between frames. See README.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *relay_env[] = {"TERM", "COLUMNS", "LINES", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
	"FORCE_COLOR", "COLORTERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", NULL};
static char *req; static size_t len, cap;
static volatile sig_atomic_t pending;
static const char *name = "gt";

static void put(const char *s, size_t n) {
	if (len + n > cap) { cap = (len + n) * 2 + 4096; if (!(req = realloc(req, cap))) exit(255); }
	memcpy(req + len, s, n); len += n;
}
static void b64(const char *s, size_t n) {
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = (const unsigned char *)s;
	put("\"", 1);
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = p[i] << 16 | (i + 1 < n ? p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
		char o[4] = {t[v >> 18 & 63], t[v >> 12 & 63], i + 1 < n ? t[v >> 6 & 63] : '=', i + 2 < n ? t[v & 63] : '='};
		put(o, 4);
	}
	put("\"", 1);
}
static int fail(const char *why) { fprintf(stderr, "%s: %s\n", name, why); return 255; }
static int writeall(int fd, const void *b, size_t n) {
	const char *p = b;
	while (n) { ssize_t w = write(fd, p, n); if (w < 0 && errno == EINTR) continue; if (w <= 0) return -1; p += w; n -= w; }
	return 0;
}
static int sendall(int fd, const void *b, size_t n) { /* no SIGPIPE once hostd is done */
	const char *p = b;
	while (n) { ssize_t w = send(fd, p, n, MSG_NOSIGNAL); if (w < 0 && errno == EINTR) continue; if (w <= 0) return -1; p += w; n -= w; }
	return 0;
}
static int frame(int fd, char typ, const void *p, size_t n) {
	unsigned char h[5] = {typ, n >> 24, n >> 16, n >> 8, n};
	return sendall(fd, h, 5) || sendall(fd, p, n) ? -1 : 0;
}
static int readall(int fd, void *b, size_t n) {
	char *p = b;
	while (n) { ssize_t r = read(fd, p, n); if (r < 0 && errno == EINTR) continue; if (r <= 0) return -1; p += r; n -= r; }
	return 0;
}
static void onsig(int s) { pending = s; }

int main(int argc, char **argv) {
	const char *sock = getenv("GT_AGENT_SOCKET");
	if (!sock || !*sock) sock = "/run/gt-agent/agent.sock";
	const char *slash = strrchr(argv[0], '/');
	if (slash && (!strcmp(slash + 1, "bd") || !strcmp(slash + 1, "gt"))) name = slash + 1;
	put("{\"argv\":[", 9); b64(name, strlen(name));
	for (int i = 1; i < argc; i++) { put(",", 1); b64(argv[i], strlen(argv[i])); }
	put("]", 1);
	char cwd[4096];
	if (getcwd(cwd, sizeof cwd)) { put(",\"cwd\":", 7); b64(cwd, strlen(cwd)); }
	int nenv = 0;
	for (char **e = environ; *e; e++)
		for (const char **k = relay_env; *k; k++) {
			size_t kl = strlen(*k);
			if (!strncmp(*e, *k, kl) && (*e)[kl] == '=') {
				if (nenv++) put(",", 1); else put(",\"env\":[", 8);
				b64(*e, strlen(*e));
			}
		}
	if (nenv) put("]", 1);
	put("}", 1);

	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strncpy(a.sun_path, sock, sizeof a.sun_path - 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) return fail("gt-agent is not running (cannot connect)");
	if (frame(fd, 'Q', req, len)) return fail("sending the command to gt-agent");
	struct sigaction sa = {.sa_handler = onsig}; /* no SA_RESTART: poll returns EINTR */
	sigaction(SIGINT, &sa, NULL); sigaction(SIGTERM, &sa, NULL); sigaction(SIGHUP, &sa, NULL);

	static char buf[1 << 20];
	struct pollfd p[2] = {{fd, POLLIN, 0}, {0, POLLIN, 0}};
	int attached = 0;
	for (;;) {
		if (pending) { unsigned char s = pending; pending = 0; frame(fd, 'S', &s, 1); }
		if (poll(p, p[1].fd < 0 ? 1 : 2, -1) < 0) { if (errno == EINTR) continue; return fail("poll"); }
		if (p[1].fd >= 0 && p[1].revents) {
			ssize_t n = read(0, buf, 32 << 10);
			if (n < 0 && errno == EINTR) continue;
			if (n > 0) frame(fd, 'I', buf, n);
			else { frame(fd, 'C', NULL, 0); p[1].fd = -1; }
			continue;
		}
		if (!p[0].revents) continue;
		unsigned char h[5];
		if (readall(fd, h, 5)) return fail("lost the connection to gt-agent before the command finished");
		size_t n = (size_t)h[1] << 24 | h[2] << 16 | h[3] << 8 | h[4];
		if (n > sizeof buf - 1 || readall(fd, buf, n)) return fail("lost the connection to gt-agent before the command finished");
		buf[n] = 0;
		switch (h[0]) {
		case 'A': attached = 1; break;
		case 'O': writeall(1, buf, n); break;
		case 'E': writeall(2, buf, n); break;
		case 'X': { char *c = strstr(buf, "\"code\":"); int code = c ? atoi(c + 7) : -1;
			return code < 0 || code > 255 ? fail("hostd sent a malformed exit status") : code; }
		case '!': fprintf(stderr, "%s: %s%s\n", name, attached ? "hostd (on the host): " : "", buf); return 255;
		}
	}
}
