/* A decoupled ensemble step that cuts each request in two (backend "seqfuzz_split"): the front of
 * modelgen's split ensembles (Variant.chunks) and of tests/test_ensemble_flags.py.
 *
 * Each request goes out as two CHUNKs, in two responses: its INPUT, then 0 (a flush, as a front end
 * that cuts a stream into frames pads its last one), so the stateful step behind it sums what the
 * request would alone and answers its running sum twice. Each response says which sequence its
 * chunk belongs to with the response parameters the ensemble scheduler reads (sequence_id,
 * sequence_start, sequence_end): the first chunk starts the sequence where the request did, the
 * second ends it where the request did:
 *
 *     chunk 1: CHUNK = INPUT, sequence_start = request's START, sequence_end = false
 *     chunk 2: CHUNK = 0,     sequence_start = false,           sequence_end = request's END
 *
 * The step must get exactly these flags (core #369). The config's CHUNKS parameter says "2", so
 * that the fuzzer knows how many answers each request gets (fuzz/spec.py).
 *
 * The backend API is declared from its documented C signatures (tritonbackend.h of Triton's core
 * repository), as modelgen/native/accumulator.c does: the symbols resolve against the server's
 * library when it loads this one.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_ResponseFactory TRITONBACKEND_ResponseFactory;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;

enum { TYPE_INT32 = 8 };  /* TRITONSERVER_DataType */
enum { MEMORY_CPU = 0, MEMORY_GPU = 2 };  /* TRITONSERVER_MemoryType */
enum { ERROR_INVALID_ARG = 3 };  /* TRITONSERVER_Error_Code */
enum { LOG_ERROR = 2 };
enum { FLAG_SEQUENCE_START = 1, FLAG_SEQUENCE_END = 2 };  /* TRITONSERVER_RequestFlag */
enum { REQUEST_RELEASE_ALL = 1, RESPONSE_COMPLETE_FINAL = 1 };

TRITONSERVER_Error* TRITONSERVER_ErrorNew(int code, const char* msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error);
TRITONSERVER_Error* TRITONSERVER_LogMessage(int level, const char* file, int line, const char* msg);
TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                               TRITONBACKEND_Input** input);
TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name, int* datatype,
                                                  const int64_t** shape, uint32_t* dims_count, uint64_t* byte_size,
                                                  uint32_t* buffer_count);
TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, uint32_t index, const void** buffer,
                                              uint64_t* buffer_byte_size, int* memory_type, int64_t* memory_type_id);
TRITONSERVER_Error* TRITONBACKEND_RequestFlags(TRITONBACKEND_Request* request, uint32_t* flags);
TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationId(TRITONBACKEND_Request* request, uint64_t* id);
TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t flags);
TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryNew(TRITONBACKEND_ResponseFactory** factory,
                                                     TRITONBACKEND_Request* request);
TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryDelete(TRITONBACKEND_ResponseFactory* factory);
TRITONSERVER_Error* TRITONBACKEND_ResponseNewFromFactory(TRITONBACKEND_Response** response,
                                                         TRITONBACKEND_ResponseFactory* factory);
TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response, TRITONBACKEND_Output** output,
                                                 const char* name, int datatype, const int64_t* shape,
                                                 uint32_t dims_count);
TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer, uint64_t byte_size,
                                               int* memory_type, int64_t* memory_type_id);
TRITONSERVER_Error* TRITONBACKEND_ResponseSetIntParameter(TRITONBACKEND_Response* response, const char* name,
                                                          int64_t value);
TRITONSERVER_Error* TRITONBACKEND_ResponseSetBoolParameter(TRITONBACKEND_Response* response, const char* name,
                                                           bool value);
TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, uint32_t flags,
                                               TRITONSERVER_Error* error);

#define TRY(expr)                      \
  do {                                 \
    TRITONSERVER_Error* err_ = (expr); \
    if (err_ != NULL) return err_;     \
  } while (0)

static void log_error(TRITONSERVER_Error* err, const char* what) {
  if (err == NULL) return;
  char msg[512];
  snprintf(msg, sizeof msg, "seqfuzz_split: %s: %s", what, TRITONSERVER_ErrorMessage(err));
  TRITONSERVER_Error* ignored = TRITONSERVER_LogMessage(LOG_ERROR, __FILE__, __LINE__, msg);
  if (ignored != NULL) TRITONSERVER_ErrorDelete(ignored);
  TRITONSERVER_ErrorDelete(err);
}

/* INPUT's one INT32 element (shape [1], no batch dimension). */
static TRITONSERVER_Error* read_value(TRITONBACKEND_Request* request, int32_t* value) {
  TRITONBACKEND_Input* input;
  const char* name;
  int dtype, kind = MEMORY_CPU;
  const int64_t* shape;
  uint32_t dims, buffers;
  uint64_t bytes, size;
  const void* buffer;
  int64_t kind_id = 0;
  TRY(TRITONBACKEND_RequestInput(request, "INPUT", &input));
  TRY(TRITONBACKEND_InputProperties(input, &name, &dtype, &shape, &dims, &bytes, &buffers));
  if (dtype != TYPE_INT32 || bytes != sizeof *value || buffers != 1)
    return TRITONSERVER_ErrorNew(ERROR_INVALID_ARG, "seqfuzz_split: INPUT must be one INT32 in one buffer");
  TRY(TRITONBACKEND_InputBuffer(input, 0, &buffer, &size, &kind, &kind_id));
  if (kind == MEMORY_GPU) return TRITONSERVER_ErrorNew(ERROR_INVALID_ARG, "seqfuzz_split: INPUT in GPU memory");
  memcpy(value, buffer, sizeof *value);
  return NULL;
}

/* One chunk: CHUNK = value, and the sequence it belongs to as response parameters. */
static TRITONSERVER_Error* fill_chunk(TRITONBACKEND_Response* response, int32_t value, uint64_t corrid,
                                      bool start, bool end) {
  static const int64_t shape[1] = {1};
  TRITONBACKEND_Output* output;
  void* buffer;
  int kind = MEMORY_CPU;
  int64_t kind_id = 0;
  TRY(TRITONBACKEND_ResponseOutput(response, &output, "CHUNK", TYPE_INT32, shape, 1));
  TRY(TRITONBACKEND_OutputBuffer(output, &buffer, sizeof value, &kind, &kind_id));
  if (kind == MEMORY_GPU) return TRITONSERVER_ErrorNew(ERROR_INVALID_ARG, "seqfuzz_split: CHUNK in GPU memory");
  memcpy(buffer, &value, sizeof value);
  TRY(TRITONBACKEND_ResponseSetIntParameter(response, "sequence_id", (int64_t)corrid));
  TRY(TRITONBACKEND_ResponseSetBoolParameter(response, "sequence_start", start));
  TRY(TRITONBACKEND_ResponseSetBoolParameter(response, "sequence_end", end));
  return NULL;
}

static void split(TRITONBACKEND_Request* request) {
  TRITONBACKEND_ResponseFactory* factory = NULL;
  TRITONSERVER_Error* err = TRITONBACKEND_ResponseFactoryNew(&factory, request);
  if (err != NULL) {
    log_error(err, "creating a response factory");
    return;
  }
  int32_t value = 0;
  uint32_t flags = 0;
  uint64_t corrid = 0;
  err = read_value(request, &value);
  if (err == NULL) err = TRITONBACKEND_RequestFlags(request, &flags);
  if (err == NULL) err = TRITONBACKEND_RequestCorrelationId(request, &corrid);
  for (int chunk = 0; chunk < 2; ++chunk) {
    TRITONBACKEND_Response* response = NULL;
    TRITONSERVER_Error* made = TRITONBACKEND_ResponseNewFromFactory(&response, factory);
    if (made != NULL) {
      log_error(made, "creating a response");
      log_error(err, "reading the request");
      break;
    }
    if (err == NULL) {
      bool start = chunk == 0 && (flags & FLAG_SEQUENCE_START);
      bool end = chunk == 1 && (flags & FLAG_SEQUENCE_END);
      err = fill_chunk(response, chunk == 0 ? value : 0, corrid, start, end);
    }
    bool last = chunk == 1 || err != NULL;  /* an error is the request's one and final response */
    log_error(TRITONBACKEND_ResponseSend(response, last ? RESPONSE_COMPLETE_FINAL : 0, err), "sending a response");
    if (err != NULL) TRITONSERVER_ErrorDelete(err);  /* the sender keeps what it sent */
    if (last) break;
  }
  log_error(TRITONBACKEND_ResponseFactoryDelete(factory), "deleting a response factory");
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  (void)instance;
  for (uint32_t r = 0; r < request_count; ++r) {
    split(requests[r]);
    log_error(TRITONBACKEND_RequestRelease(requests[r], REQUEST_RELEASE_ALL), "releasing a request");
  }
  return NULL;
}
