/* The op audit of one serialized ONNX model: what an NPU compiler (QNN HTP
 * through ONNX Runtime or qairt-converter, spec onnx-export.md) will take.
 * The bytes are untrusted (a file on disk): any input yields a report or a
 * FORMAT error, never a crash (fuzz/fuzz_onnx_audit.c). */
#ifndef EMBER_ONNX_AUDIT_H
#define EMBER_ONNX_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "ember_export.h"

/* Reports label's IR version, opsets, op counts and I/O shapes through line
 * (may be NULL), then one "FAIL: ..." line per finding. Returns EMBER_OK,
 * EMBER_ERR_UNSUPPORTED (findings; the first is the error message) or
 * EMBER_ERR_FORMAT (not an ONNX model). */
ember_status onnx_audit(const uint8_t *bytes, size_t len, const char *label, ember_line_fn line,
                        void *user);

/* 1 when an op of this type (ai.onnx or com.microsoft domain) is in the QNN
 * HTP allow-list this audit enforces. */
int onnx_audit_op_allowed(const char *op_type);

#endif
