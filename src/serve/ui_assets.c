/* The UI's files as read-only data (see ui_assets.h). .incbin takes paths
 * relative to the directory the compiler runs in: the repository root, where
 * make runs. */
#include "serve/ui_assets.h"

#include <string.h>

/* sym[] .. sym_end[]: the bytes of file, in .rodata. */
#define EMBED(sym, file)                                                                      \
    __asm__(".section .rodata\n.balign 16\n" #sym ":\n.incbin \"" file "\"\n" #sym "_end:\n"   \
            ".previous\n");                                                                   \
    extern const unsigned char sym[] __attribute__((visibility("hidden")));                   \
    extern const unsigned char sym##_end[] __attribute__((visibility("hidden")))

EMBED(ui_index_html, "src/serve/ui/index.html");
EMBED(ui_js, "src/serve/ui/ui.js");
EMBED(ui_css, "src/serve/ui/ui.css");
EMBED(ui_favicon, "src/serve/ui/favicon.svg");

int sv_ui_asset(const char *path, sv_asset *out)
{
    static const struct {
        const char *path, *type;
        const unsigned char *start, *end;
    } table[] = {
        {"/", "text/html; charset=utf-8", ui_index_html, ui_index_html_end},
        {"/ui.js", "text/javascript; charset=utf-8", ui_js, ui_js_end},
        {"/ui.css", "text/css; charset=utf-8", ui_css, ui_css_end},
        {"/favicon.svg", "image/svg+xml", ui_favicon, ui_favicon_end},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(path, table[i].path)) {
            *out = (sv_asset){table[i].path, table[i].type, table[i].start,
                              (size_t)(table[i].end - table[i].start)};
            return 1;
        }
    return 0;
}
