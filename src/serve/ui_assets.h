/* The browser UI that `ember serve` answers GET / with: the files of
 * src/serve/ui/ (index.html, ui.js, ui.css, favicon.svg), built into the
 * binary by the assembler's .incbin (ui_assets.c; the Makefile makes its
 * object depend on them). Served without authentication (the page asks for
 * the API key itself) under a strict Content-Security-Policy: scripts and
 * styles only from these files, no inline code, no eval. */
#ifndef EMBER_SERVE_UI_ASSETS_H
#define EMBER_SERVE_UI_ASSETS_H

#include <stddef.h>

typedef struct sv_asset {
    const char *path;         /* "/", "/ui.js", ... */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} sv_asset;

/* The policy the UI's responses carry. */
#define SV_UI_CSP                                                                             \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "         \
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "        \
    "form-action 'none'; frame-ancestors 'none'"

/* The asset served at a request path: 1 and *out set, or 0. */
int sv_ui_asset(const char *path, sv_asset *out);

#endif
