/*
 * mpi.h of mpi-lite: MPI 3.1 on SkifCh channels (the `mpi-lite` crate of the SkifCh
 * workspace; library libskifmpi.so / libskifmpi.a, wrappers bin/skif-mpicc and
 * bin/skif-mpicxx).
 *
 * Handles are integers (as in MPICH): a program that compiles against a standard MPI
 * header compiles against this one; it is not binary compatible with other MPIs.
 * Every MPI_X function also exists as PMPI_X (the profiling interface, MPI-3.1 §14.2):
 * MPI_X calls PMPI_X, so a tool linked before the shared library may define MPI_X and
 * call PMPI_X.
 *
 * What is not implemented returns MPI_ERR_UNSUPPORTED_OPERATION (or, under
 * MPI_ERRORS_ARE_FATAL, aborts with a message naming the call): see mpi-lite/README.md.
 */
#ifndef SKIF_MPI_LITE_MPI_H
#define SKIF_MPI_LITE_MPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPI_VERSION 3
#define MPI_SUBVERSION 1
/* The implementation (as MPICH_VERSION / OMPI_MAJOR_VERSION identify theirs): tools and
 * build systems test MPI_LITE; the version is the mpi-lite crate's. */
#define MPI_LITE 1
#define MPI_LITE_VERSION "0.1.0"
#define MPI_LITE_NUMVERSION 100 /* major * 10000 + minor * 100 + patch */

/* ---- handles ---- */
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Group;
typedef int MPI_Request;
typedef int MPI_Op;
typedef int MPI_Errhandler;
typedef int MPI_Win;
typedef int MPI_Info;
typedef int MPI_Message;
typedef int MPI_File;
typedef int MPI_Fint;
typedef intptr_t MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;

typedef struct MPI_Status {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int mpi_lite_cancelled;
    long long mpi_lite_count; /* bytes received */
} MPI_Status;

/* MPI_Status as Fortran INTEGERs (MPI-3.1 §17.2.5): the same words. */
#define MPI_F_STATUS_SIZE 6
#define MPI_F_SOURCE 0
#define MPI_F_TAG 1
#define MPI_F_ERROR 2
#define MPI_F_STATUS_IGNORE ((MPI_Fint *)0)
#define MPI_F_STATUSES_IGNORE ((MPI_Fint *)0)

#define MPI_COMM_NULL ((MPI_Comm)0)
#define MPI_COMM_WORLD ((MPI_Comm)1)
#define MPI_COMM_SELF ((MPI_Comm)2)

#define MPI_GROUP_NULL ((MPI_Group)0)
#define MPI_GROUP_EMPTY ((MPI_Group)1)

#define MPI_REQUEST_NULL ((MPI_Request)0)
#define MPI_MESSAGE_NULL ((MPI_Message)0)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)0x6c000000)
#define MPI_WIN_NULL ((MPI_Win)0)
#define MPI_INFO_NULL ((MPI_Info)0)
#define MPI_INFO_ENV ((MPI_Info)1)
#define MPI_FILE_NULL ((MPI_File)0)

#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0)
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)1)
#define MPI_ERRORS_RETURN ((MPI_Errhandler)2)

/* Datatypes: the order of mpi_lite::datatype::Basic::ALL. */
#define MPI_DATATYPE_NULL ((MPI_Datatype)0)
#define MPI_CHAR ((MPI_Datatype)1)
#define MPI_SIGNED_CHAR ((MPI_Datatype)2)
#define MPI_UNSIGNED_CHAR ((MPI_Datatype)3)
#define MPI_BYTE ((MPI_Datatype)4)
#define MPI_PACKED ((MPI_Datatype)5)
#define MPI_WCHAR ((MPI_Datatype)6)
#define MPI_SHORT ((MPI_Datatype)7)
#define MPI_UNSIGNED_SHORT ((MPI_Datatype)8)
#define MPI_INT ((MPI_Datatype)9)
#define MPI_UNSIGNED ((MPI_Datatype)10)
#define MPI_LONG ((MPI_Datatype)11)
#define MPI_UNSIGNED_LONG ((MPI_Datatype)12)
#define MPI_LONG_LONG ((MPI_Datatype)13)
#define MPI_LONG_LONG_INT MPI_LONG_LONG
#define MPI_UNSIGNED_LONG_LONG ((MPI_Datatype)14)
#define MPI_FLOAT ((MPI_Datatype)15)
#define MPI_DOUBLE ((MPI_Datatype)16)
#define MPI_LONG_DOUBLE ((MPI_Datatype)17)
#define MPI_C_BOOL ((MPI_Datatype)18)
#define MPI_INT8_T ((MPI_Datatype)19)
#define MPI_INT16_T ((MPI_Datatype)20)
#define MPI_INT32_T ((MPI_Datatype)21)
#define MPI_INT64_T ((MPI_Datatype)22)
#define MPI_UINT8_T ((MPI_Datatype)23)
#define MPI_UINT16_T ((MPI_Datatype)24)
#define MPI_UINT32_T ((MPI_Datatype)25)
#define MPI_UINT64_T ((MPI_Datatype)26)
#define MPI_AINT ((MPI_Datatype)27)
#define MPI_OFFSET ((MPI_Datatype)28)
#define MPI_COUNT ((MPI_Datatype)29)
#define MPI_C_FLOAT_COMPLEX ((MPI_Datatype)30)
#define MPI_C_COMPLEX MPI_C_FLOAT_COMPLEX
#define MPI_C_DOUBLE_COMPLEX ((MPI_Datatype)31)
#define MPI_FLOAT_INT ((MPI_Datatype)32)
#define MPI_DOUBLE_INT ((MPI_Datatype)33)
#define MPI_LONG_INT ((MPI_Datatype)34)
#define MPI_2INT ((MPI_Datatype)35)
#define MPI_SHORT_INT ((MPI_Datatype)36)
#define MPI_LONG_DOUBLE_INT ((MPI_Datatype)37)
#define MPI_C_LONG_DOUBLE_COMPLEX ((MPI_Datatype)38)
#define MPI_CXX_BOOL ((MPI_Datatype)39)
#define MPI_CXX_FLOAT_COMPLEX ((MPI_Datatype)40)
#define MPI_CXX_DOUBLE_COMPLEX ((MPI_Datatype)41)
#define MPI_CXX_LONG_DOUBLE_COMPLEX ((MPI_Datatype)42)

/* The Fortran named types, for C programs that name them (MPI-3.1 §17.2.5), with the
 * layout gfortran gives them on x86-64/aarch64 Linux. Sizes this library does not have
 * are MPI_DATATYPE_NULL. */
#define MPI_INTEGER ((MPI_Datatype)43)
#define MPI_REAL ((MPI_Datatype)44)
#define MPI_DOUBLE_PRECISION ((MPI_Datatype)45)
#define MPI_COMPLEX ((MPI_Datatype)46)
#define MPI_DOUBLE_COMPLEX ((MPI_Datatype)47)
#define MPI_LOGICAL ((MPI_Datatype)48)
#define MPI_CHARACTER ((MPI_Datatype)49)
#define MPI_INTEGER1 ((MPI_Datatype)50)
#define MPI_INTEGER2 ((MPI_Datatype)51)
#define MPI_INTEGER4 ((MPI_Datatype)52)
#define MPI_INTEGER8 ((MPI_Datatype)53)
#define MPI_REAL4 ((MPI_Datatype)54)
#define MPI_REAL8 ((MPI_Datatype)55)
#define MPI_COMPLEX8 ((MPI_Datatype)56)
#define MPI_COMPLEX16 ((MPI_Datatype)57)
#define MPI_2INTEGER ((MPI_Datatype)58)
#define MPI_2REAL ((MPI_Datatype)59)
#define MPI_2DOUBLE_PRECISION ((MPI_Datatype)60)
#define MPI_INTEGER16 MPI_DATATYPE_NULL
#define MPI_REAL2 MPI_DATATYPE_NULL
#define MPI_REAL16 MPI_DATATYPE_NULL
#define MPI_COMPLEX4 MPI_DATATYPE_NULL
#define MPI_COMPLEX32 MPI_DATATYPE_NULL
#define MPI_2COMPLEX MPI_DATATYPE_NULL
#define MPI_2DOUBLE_COMPLEX MPI_DATATYPE_NULL
#define MPI_LOGICAL1 MPI_DATATYPE_NULL
#define MPI_LOGICAL2 MPI_DATATYPE_NULL
#define MPI_LOGICAL4 MPI_DATATYPE_NULL
#define MPI_LOGICAL8 MPI_DATATYPE_NULL

/* Reduction operations. */
#define MPI_OP_NULL ((MPI_Op)0)
#define MPI_MAX ((MPI_Op)1)
#define MPI_MIN ((MPI_Op)2)
#define MPI_SUM ((MPI_Op)3)
#define MPI_PROD ((MPI_Op)4)
#define MPI_LAND ((MPI_Op)5)
#define MPI_BAND ((MPI_Op)6)
#define MPI_LOR ((MPI_Op)7)
#define MPI_BOR ((MPI_Op)8)
#define MPI_LXOR ((MPI_Op)9)
#define MPI_BXOR ((MPI_Op)10)
#define MPI_MINLOC ((MPI_Op)11)
#define MPI_MAXLOC ((MPI_Op)12)
#define MPI_REPLACE ((MPI_Op)13)
#define MPI_NO_OP ((MPI_Op)14)

/* ---- constants ---- */
#define MPI_ANY_SOURCE (-2)
#define MPI_PROC_NULL (-1)
#define MPI_ROOT (-3)
#define MPI_ANY_TAG (-1)
#define MPI_UNDEFINED (-32766)
#define MPI_KEYVAL_INVALID 0x24000000
#define MPI_BSEND_OVERHEAD 96
#define MPI_MAX_PROCESSOR_NAME 128
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_INFO_KEY 255
#define MPI_MAX_INFO_VAL 1024
#define MPI_MAX_PORT_NAME 256
#define MPI_ARGV_NULL ((char **)0)
#define MPI_ARGVS_NULL ((char ***)0)

#define MPI_STATUS_IGNORE ((MPI_Status *)1)
#define MPI_STATUSES_IGNORE ((MPI_Status *)1)
#define MPI_IN_PLACE ((void *)-1)
#define MPI_BOTTOM ((void *)0)
/* Sentinels: the addresses of two objects of the library (never written). */
extern int mpi_lite_unweighted, mpi_lite_weights_empty;
#define MPI_UNWEIGHTED (&mpi_lite_unweighted)
#define MPI_WEIGHTS_EMPTY (&mpi_lite_weights_empty)
#define MPI_ERRCODES_IGNORE ((int *)0)

#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

#define MPI_GRAPH 1
#define MPI_CART 2
#define MPI_DIST_GRAPH 3

#define MPI_ORDER_C 56
#define MPI_ORDER_FORTRAN 57
#define MPI_COMM_TYPE_SHARED 1

/* Type constructors (MPI_Type_get_envelope; MPICH's numbers). */
#define MPI_COMBINER_NAMED 1
#define MPI_COMBINER_DUP 2
#define MPI_COMBINER_CONTIGUOUS 3
#define MPI_COMBINER_VECTOR 4
#define MPI_COMBINER_HVECTOR_INTEGER 5
#define MPI_COMBINER_HVECTOR 6
#define MPI_COMBINER_INDEXED 7
#define MPI_COMBINER_HINDEXED_INTEGER 8
#define MPI_COMBINER_HINDEXED 9
#define MPI_COMBINER_INDEXED_BLOCK 10
#define MPI_COMBINER_STRUCT_INTEGER 11
#define MPI_COMBINER_STRUCT 12
#define MPI_COMBINER_SUBARRAY 13
#define MPI_COMBINER_DARRAY 14
#define MPI_COMBINER_F90_REAL 15
#define MPI_COMBINER_F90_COMPLEX 16
#define MPI_COMBINER_F90_INTEGER 17
#define MPI_COMBINER_RESIZED 18
#define MPI_COMBINER_HINDEXED_BLOCK 19

#define MPI_DISTRIBUTE_BLOCK 121
#define MPI_DISTRIBUTE_CYCLIC 122
#define MPI_DISTRIBUTE_NONE 123
#define MPI_DISTRIBUTE_DFLT_DARG (-49767)

#define MPI_TYPECLASS_REAL 1
#define MPI_TYPECLASS_INTEGER 2
#define MPI_TYPECLASS_COMPLEX 3

/* Predefined attribute keys (MPI_Comm_get_attr). */
#define MPI_TAG_UB 0x64400001
#define MPI_HOST 0x64400003
#define MPI_IO 0x64400005
#define MPI_WTIME_IS_GLOBAL 0x64400007
#define MPI_UNIVERSE_SIZE 0x64400009
#define MPI_LASTUSEDCODE 0x6440000b
#define MPI_APPNUM 0x6440000d

/* One-sided constants (the calls return MPI_ERR_UNSUPPORTED_OPERATION for now). */
#define MPI_LOCK_EXCLUSIVE 234
#define MPI_LOCK_SHARED 235
#define MPI_MODE_NOCHECK 1024
#define MPI_MODE_NOSTORE 2048
#define MPI_MODE_NOPUT 4096
#define MPI_MODE_NOPRECEDE 8192
#define MPI_MODE_NOSUCCEED 16384
#define MPI_WIN_BASE 0x66000001
#define MPI_WIN_SIZE 0x66000003
#define MPI_WIN_DISP_UNIT 0x66000005
#define MPI_WIN_CREATE_FLAVOR 0x66000007
#define MPI_WIN_MODEL 0x66000009
#define MPI_WIN_FLAVOR_CREATE 1
#define MPI_WIN_FLAVOR_ALLOCATE 2
#define MPI_WIN_FLAVOR_DYNAMIC 3
#define MPI_WIN_FLAVOR_SHARED 4
#define MPI_WIN_SEPARATE 1
#define MPI_WIN_UNIFIED 2

/* ---- error classes (MPICH's numbers; MPI-3.1 §8.4 Table 8.2, §14.3.9) ---- */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_ROOT 7
#define MPI_ERR_GROUP 8
#define MPI_ERR_OP 9
#define MPI_ERR_TOPOLOGY 10
#define MPI_ERR_DIMS 11
#define MPI_ERR_ARG 12
#define MPI_ERR_UNKNOWN 13
#define MPI_ERR_TRUNCATE 14
#define MPI_ERR_OTHER 15
#define MPI_ERR_INTERN 16
#define MPI_ERR_IN_STATUS 17
#define MPI_ERR_PENDING 18
#define MPI_ERR_REQUEST 19
#define MPI_ERR_ACCESS 20
#define MPI_ERR_AMODE 21
#define MPI_ERR_BAD_FILE 22
#define MPI_ERR_CONVERSION 23
#define MPI_ERR_DUP_DATAREP 24
#define MPI_ERR_FILE_EXISTS 25
#define MPI_ERR_FILE_IN_USE 26
#define MPI_ERR_FILE 27
#define MPI_ERR_INFO 28
#define MPI_ERR_INFO_KEY 29
#define MPI_ERR_INFO_VALUE 30
#define MPI_ERR_INFO_NOKEY 31
#define MPI_ERR_IO 32
#define MPI_ERR_NAME 33
#define MPI_ERR_NO_MEM 34
#define MPI_ERR_NOT_SAME 35
#define MPI_ERR_NO_SPACE 36
#define MPI_ERR_NO_SUCH_FILE 37
#define MPI_ERR_PORT 38
#define MPI_ERR_QUOTA 39
#define MPI_ERR_READ_ONLY 40
#define MPI_ERR_SERVICE 41
#define MPI_ERR_SPAWN 42
#define MPI_ERR_UNSUPPORTED_DATAREP 43
#define MPI_ERR_UNSUPPORTED_OPERATION 44
#define MPI_ERR_WIN 45
#define MPI_ERR_BASE 46
#define MPI_ERR_LOCKTYPE 47
#define MPI_ERR_KEYVAL 48
#define MPI_ERR_RMA_CONFLICT 49
#define MPI_ERR_RMA_SYNC 50
#define MPI_ERR_SIZE 51
#define MPI_ERR_DISP 52
#define MPI_ERR_ASSERT 53
#define MPI_ERR_RMA_RANGE 55
#define MPI_ERR_RMA_ATTACH 56
#define MPI_ERR_RMA_SHARED 57
#define MPI_ERR_RMA_FLAVOR 58
#define MPI_T_ERR_MEMORY 59
#define MPI_T_ERR_NOT_INITIALIZED 60
#define MPI_T_ERR_CANNOT_INIT 61
#define MPI_T_ERR_INVALID_INDEX 62
#define MPI_T_ERR_INVALID_ITEM 63
#define MPI_T_ERR_INVALID_HANDLE 64
#define MPI_T_ERR_OUT_OF_HANDLES 65
#define MPI_T_ERR_OUT_OF_SESSIONS 66
#define MPI_T_ERR_INVALID_SESSION 67
#define MPI_T_ERR_CVAR_SET_NOT_NOW 68
#define MPI_T_ERR_CVAR_SET_NEVER 69
#define MPI_T_ERR_PVAR_NO_STARTSTOP 70
#define MPI_T_ERR_PVAR_NO_WRITE 71
#define MPI_T_ERR_PVAR_NO_ATOMIC 72
#define MPI_T_ERR_INVALID_NAME 73
#define MPI_T_ERR_INVALID 74
#define MPI_ERR_LASTCODE 0x3fffffff

/* Attribute callbacks (handles are ints: one shape for every kind). */
typedef int(MPI_Comm_copy_attr_function)(MPI_Comm oldcomm, int comm_keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int(MPI_Comm_delete_attr_function)(MPI_Comm comm, int comm_keyval, void *attribute_val, void *extra_state);
typedef int(MPI_Type_copy_attr_function)(MPI_Datatype oldtype, int type_keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int(MPI_Type_delete_attr_function)(MPI_Datatype datatype, int type_keyval, void *attribute_val, void *extra_state);
typedef int(MPI_Win_copy_attr_function)(MPI_Win oldwin, int win_keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int(MPI_Win_delete_attr_function)(MPI_Win win, int win_keyval, void *attribute_val, void *extra_state);
typedef int(MPI_Copy_function)(MPI_Comm oldcomm, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);
typedef int(MPI_Delete_function)(MPI_Comm comm, int keyval, void *attribute_val, void *extra_state);
/* The copy callback of the *_DUP_FN names (copies the value); the NULL ones are null. */
int mpi_lite_attr_dup_fn(int oldobj, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out, int *flag);
#define MPI_COMM_NULL_COPY_FN ((MPI_Comm_copy_attr_function *)0)
#define MPI_COMM_NULL_DELETE_FN ((MPI_Comm_delete_attr_function *)0)
#define MPI_COMM_DUP_FN ((MPI_Comm_copy_attr_function *)mpi_lite_attr_dup_fn)
#define MPI_TYPE_NULL_COPY_FN ((MPI_Type_copy_attr_function *)0)
#define MPI_TYPE_NULL_DELETE_FN ((MPI_Type_delete_attr_function *)0)
#define MPI_TYPE_DUP_FN ((MPI_Type_copy_attr_function *)mpi_lite_attr_dup_fn)
#define MPI_WIN_NULL_COPY_FN ((MPI_Win_copy_attr_function *)0)
#define MPI_WIN_NULL_DELETE_FN ((MPI_Win_delete_attr_function *)0)
#define MPI_WIN_DUP_FN ((MPI_Win_copy_attr_function *)mpi_lite_attr_dup_fn)
#define MPI_NULL_COPY_FN ((MPI_Copy_function *)0)
#define MPI_NULL_DELETE_FN ((MPI_Delete_function *)0)
#define MPI_DUP_FN ((MPI_Copy_function *)mpi_lite_attr_dup_fn)

typedef void(MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
typedef void(MPI_Comm_errhandler_function)(MPI_Comm *, int *, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef void(MPI_Win_errhandler_function)(MPI_Win *, int *, ...);
typedef int(MPI_Grequest_query_function)(void *extra_state, MPI_Status *status);
typedef int(MPI_Grequest_free_function)(void *extra_state);
typedef int(MPI_Grequest_cancel_function)(void *extra_state, int complete);
typedef void(MPI_File_errhandler_function)(MPI_File *, int *, ...);

/* ---- functions (each also as PMPI_...) ---- */
#define MPI_LITE_FN(ret, name, args) ret MPI_##name args; ret PMPI_##name args;

/* environment */
MPI_LITE_FN(int, Init, (int *argc, char ***argv))
MPI_LITE_FN(int, Init_thread, (int *argc, char ***argv, int required, int *provided))
MPI_LITE_FN(int, Finalize, (void))
MPI_LITE_FN(int, Initialized, (int *flag))
MPI_LITE_FN(int, Finalized, (int *flag))
MPI_LITE_FN(int, Abort, (MPI_Comm comm, int errorcode))
MPI_LITE_FN(int, Query_thread, (int *provided))
MPI_LITE_FN(int, Is_thread_main, (int *flag))
MPI_LITE_FN(double, Wtime, (void))
MPI_LITE_FN(double, Wtick, (void))
MPI_LITE_FN(int, Get_processor_name, (char *name, int *resultlen))
MPI_LITE_FN(int, Get_version, (int *version, int *subversion))
MPI_LITE_FN(int, Get_library_version, (char *version, int *resultlen))
MPI_LITE_FN(int, Error_string, (int errorcode, char *string, int *resultlen))
MPI_LITE_FN(int, Error_class, (int errorcode, int *errorclass))
MPI_LITE_FN(int, Comm_set_errhandler, (MPI_Comm comm, MPI_Errhandler errhandler))
MPI_LITE_FN(int, Comm_get_errhandler, (MPI_Comm comm, MPI_Errhandler *errhandler))
MPI_LITE_FN(int, Errhandler_free, (MPI_Errhandler *errhandler))
MPI_LITE_FN(int, Comm_create_errhandler, (MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler))

/* MPI-1 calls removed in MPI-3.0 (MPI-3.1 §17.2), kept like MPICH keeps them for old
 * programs: each is its MPI-2 replacement under the old name (MPI_LB/MPI_UB are not). */
typedef MPI_Comm_errhandler_function MPI_Handler_function;
MPI_LITE_FN(int, Address, (void *location, MPI_Aint *address))
MPI_LITE_FN(int, Type_extent, (MPI_Datatype datatype, MPI_Aint *extent))
MPI_LITE_FN(int, Type_lb, (MPI_Datatype datatype, MPI_Aint *displacement))
MPI_LITE_FN(int, Type_ub, (MPI_Datatype datatype, MPI_Aint *displacement))
MPI_LITE_FN(int, Type_hvector, (int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_hindexed, (int count, int *array_of_blocklengths, MPI_Aint *array_of_displacements, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_struct, (int count, int *array_of_blocklengths, MPI_Aint *array_of_displacements, MPI_Datatype *array_of_types, MPI_Datatype *newtype))
MPI_LITE_FN(int, Errhandler_create, (MPI_Handler_function *function, MPI_Errhandler *errhandler))
MPI_LITE_FN(int, Errhandler_set, (MPI_Comm comm, MPI_Errhandler errhandler))
MPI_LITE_FN(int, Errhandler_get, (MPI_Comm comm, MPI_Errhandler *errhandler))
MPI_LITE_FN(int, Comm_call_errhandler, (MPI_Comm comm, int errorcode))
MPI_LITE_FN(int, Add_error_class, (int *errorclass))
MPI_LITE_FN(int, Add_error_code, (int errorclass, int *errorcode))
MPI_LITE_FN(int, Add_error_string, (int errorcode, const char *string))
MPI_LITE_FN(int, Win_create_errhandler, (MPI_Win_errhandler_function *fn, MPI_Errhandler *errhandler))
MPI_LITE_FN(int, Win_set_errhandler, (MPI_Win win, MPI_Errhandler errhandler))
MPI_LITE_FN(int, Win_get_errhandler, (MPI_Win win, MPI_Errhandler *errhandler))
MPI_LITE_FN(int, Win_call_errhandler, (MPI_Win win, int errorcode))
MPI_LITE_FN(int, File_create_errhandler, (MPI_File_errhandler_function *fn, MPI_Errhandler *errhandler))
MPI_LITE_FN(int, File_set_errhandler, (MPI_File file, MPI_Errhandler errhandler))
MPI_LITE_FN(int, File_get_errhandler, (MPI_File file, MPI_Errhandler *errhandler))
MPI_LITE_FN(int, File_call_errhandler, (MPI_File fh, int errorcode))
MPI_LITE_FN(int, Pcontrol, (const int level, ...))

/* point-to-point */
MPI_LITE_FN(int, Send, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm))
MPI_LITE_FN(int, Ssend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm))
MPI_LITE_FN(int, Rsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm))
MPI_LITE_FN(int, Bsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm))
MPI_LITE_FN(int, Recv, (void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status))
MPI_LITE_FN(int, Isend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Issend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Irsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ibsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Irecv, (void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Sendrecv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status))
MPI_LITE_FN(int, Sendrecv_replace, (void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status))
MPI_LITE_FN(int, Buffer_attach, (void *buffer, int size))
MPI_LITE_FN(int, Buffer_detach, (void *buffer_addr, int *size))
MPI_LITE_FN(int, Wait, (MPI_Request *request, MPI_Status *status))
MPI_LITE_FN(int, Waitall, (int count, MPI_Request *array_of_requests, MPI_Status *array_of_statuses))
MPI_LITE_FN(int, Waitany, (int count, MPI_Request *array_of_requests, int *index, MPI_Status *status))
MPI_LITE_FN(int, Waitsome, (int incount, MPI_Request *array_of_requests, int *outcount, int array_of_indices[], MPI_Status *array_of_statuses))
MPI_LITE_FN(int, Test, (MPI_Request *request, int *flag, MPI_Status *status))
MPI_LITE_FN(int, Testall, (int count, MPI_Request *array_of_requests, int *flag, MPI_Status *array_of_statuses))
MPI_LITE_FN(int, Testany, (int count, MPI_Request *array_of_requests, int *index, int *flag, MPI_Status *status))
MPI_LITE_FN(int, Testsome, (int incount, MPI_Request *array_of_requests, int *outcount, int array_of_indices[], MPI_Status *array_of_statuses))
MPI_LITE_FN(int, Request_free, (MPI_Request *request))
MPI_LITE_FN(int, Request_get_status, (MPI_Request request, int *flag, MPI_Status *status))
MPI_LITE_FN(int, Cancel, (MPI_Request *request))
MPI_LITE_FN(int, Test_cancelled, (const MPI_Status *status, int *flag))
MPI_LITE_FN(int, Probe, (int source, int tag, MPI_Comm comm, MPI_Status *status))
MPI_LITE_FN(int, Iprobe, (int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status))
MPI_LITE_FN(int, Mprobe, (int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status))
MPI_LITE_FN(int, Improbe, (int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status))
MPI_LITE_FN(int, Mrecv, (void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status))
MPI_LITE_FN(int, Imrecv, (void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request))
MPI_LITE_FN(int, Get_count, (const MPI_Status *status, MPI_Datatype datatype, int *count))
MPI_LITE_FN(int, Get_elements, (const MPI_Status *status, MPI_Datatype datatype, int *count))
MPI_LITE_FN(int, Send_init, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Bsend_init, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ssend_init, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Rsend_init, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Recv_init, (void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Start, (MPI_Request *request))
MPI_LITE_FN(int, Startall, (int count, MPI_Request *array_of_requests))

/* datatypes */
MPI_LITE_FN(int, Type_contiguous, (int count, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_vector, (int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_hvector, (int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_indexed, (int count, const int array_of_blocklengths[], const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_hindexed, (int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_indexed_block, (int count, int blocklength, const int array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_struct, (int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[], const MPI_Datatype array_of_types[], MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_resized, (MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_dup, (MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_commit, (MPI_Datatype *datatype))
MPI_LITE_FN(int, Type_free, (MPI_Datatype *datatype))
MPI_LITE_FN(int, Type_size, (MPI_Datatype datatype, int *size))
MPI_LITE_FN(int, Type_size_x, (MPI_Datatype datatype, MPI_Count *size))
MPI_LITE_FN(int, Type_get_extent, (MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent))
MPI_LITE_FN(int, Type_get_true_extent, (MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent))
MPI_LITE_FN(int, Type_get_name, (MPI_Datatype datatype, char *type_name, int *resultlen))
MPI_LITE_FN(int, Type_set_name, (MPI_Datatype datatype, const char *type_name))
MPI_LITE_FN(int, Pack, (const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position, MPI_Comm comm))
MPI_LITE_FN(int, Unpack, (const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype, MPI_Comm comm))
MPI_LITE_FN(int, Pack_size, (int incount, MPI_Datatype datatype, MPI_Comm comm, int *size))
MPI_LITE_FN(int, Get_address, (const void *location, MPI_Aint *address))
MPI_LITE_FN(MPI_Aint, Aint_add, (MPI_Aint base, MPI_Aint disp))
MPI_LITE_FN(MPI_Aint, Aint_diff, (MPI_Aint addr1, MPI_Aint addr2))
MPI_LITE_FN(int, Type_create_hindexed_block, (int count, int blocklength, const MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_subarray, (int ndims, const int array_of_sizes[], const int array_of_subsizes[], const int array_of_starts[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_darray, (int size, int rank, int ndims, const int array_of_gsizes[], const int array_of_distribs[], const int array_of_dargs[], const int array_of_psizes[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_get_envelope, (MPI_Datatype datatype, int *num_integers, int *num_addresses, int *num_datatypes, int *combiner))
MPI_LITE_FN(int, Type_get_contents, (MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[]))
MPI_LITE_FN(int, Type_match_size, (int typeclass, int size, MPI_Datatype *datatype))
MPI_LITE_FN(int, Type_create_f90_integer, (int r, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_f90_real, (int p, int r, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_create_f90_complex, (int p, int r, MPI_Datatype *newtype))
MPI_LITE_FN(int, Type_get_extent_x, (MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent))
MPI_LITE_FN(int, Type_get_true_extent_x, (MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent))
MPI_LITE_FN(int, Get_elements_x, (const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count))
MPI_LITE_FN(int, Status_set_elements, (MPI_Status *status, MPI_Datatype datatype, int count))
MPI_LITE_FN(int, Status_set_elements_x, (MPI_Status *status, MPI_Datatype datatype, MPI_Count count))
MPI_LITE_FN(int, Status_set_cancelled, (MPI_Status *status, int flag))
MPI_LITE_FN(int, Grequest_start, (MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn, MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request))
MPI_LITE_FN(int, Grequest_complete, (MPI_Request request))
MPI_LITE_FN(int, Pack_external, (const char datarep[], const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, MPI_Aint outsize, MPI_Aint *position))
MPI_LITE_FN(int, Unpack_external, (const char datarep[], const void *inbuf, MPI_Aint insize, MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype))
MPI_LITE_FN(int, Pack_external_size, (const char datarep[], int incount, MPI_Datatype datatype, MPI_Aint *size))

/* groups */
MPI_LITE_FN(int, Comm_group, (MPI_Comm comm, MPI_Group *group))
MPI_LITE_FN(int, Group_size, (MPI_Group group, int *size))
MPI_LITE_FN(int, Group_rank, (MPI_Group group, int *rank))
MPI_LITE_FN(int, Group_incl, (MPI_Group group, int n, const int ranks[], MPI_Group *newgroup))
MPI_LITE_FN(int, Group_excl, (MPI_Group group, int n, const int ranks[], MPI_Group *newgroup))
MPI_LITE_FN(int, Group_range_incl, (MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup))
MPI_LITE_FN(int, Group_range_excl, (MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup))
MPI_LITE_FN(int, Group_union, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup))
MPI_LITE_FN(int, Group_intersection, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup))
MPI_LITE_FN(int, Group_difference, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup))
MPI_LITE_FN(int, Group_translate_ranks, (MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]))
MPI_LITE_FN(int, Group_compare, (MPI_Group group1, MPI_Group group2, int *result))
MPI_LITE_FN(int, Group_free, (MPI_Group *group))

/* communicators */
MPI_LITE_FN(int, Comm_size, (MPI_Comm comm, int *size))
MPI_LITE_FN(int, Comm_rank, (MPI_Comm comm, int *rank))
MPI_LITE_FN(int, Comm_dup, (MPI_Comm comm, MPI_Comm *newcomm))
MPI_LITE_FN(int, Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm))
MPI_LITE_FN(int, Comm_split_type, (MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm))
MPI_LITE_FN(int, Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm))
MPI_LITE_FN(int, Comm_free, (MPI_Comm *comm))
MPI_LITE_FN(int, Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm))
MPI_LITE_FN(int, Comm_idup, (MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request))
MPI_LITE_FN(int, Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm))
MPI_LITE_FN(int, Comm_set_info, (MPI_Comm comm, MPI_Info info))
MPI_LITE_FN(int, Comm_get_info, (MPI_Comm comm, MPI_Info *info_used))
MPI_LITE_FN(int, Comm_compare, (MPI_Comm comm1, MPI_Comm comm2, int *result))
MPI_LITE_FN(int, Comm_test_inter, (MPI_Comm comm, int *flag))
MPI_LITE_FN(int, Comm_remote_size, (MPI_Comm comm, int *size))
MPI_LITE_FN(int, Comm_remote_group, (MPI_Comm comm, MPI_Group *group))
MPI_LITE_FN(int, Intercomm_create, (MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag, MPI_Comm *newintercomm))
MPI_LITE_FN(int, Intercomm_merge, (MPI_Comm intercomm, int high, MPI_Comm *newintracomm))
MPI_LITE_FN(int, Comm_set_name, (MPI_Comm comm, const char *comm_name))
MPI_LITE_FN(int, Comm_get_name, (MPI_Comm comm, char *comm_name, int *resultlen))
MPI_LITE_FN(int, Comm_get_attr, (MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag))

/* attribute caching (MPI-3.1 §6.7; MPI_Comm_get_attr above) */
MPI_LITE_FN(int, Comm_create_keyval, (MPI_Comm_copy_attr_function *comm_copy_attr_fn, MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval, void *extra_state))
MPI_LITE_FN(int, Comm_free_keyval, (int *comm_keyval))
MPI_LITE_FN(int, Comm_set_attr, (MPI_Comm comm, int comm_keyval, void *attribute_val))
MPI_LITE_FN(int, Comm_delete_attr, (MPI_Comm comm, int comm_keyval))
MPI_LITE_FN(int, Type_create_keyval, (MPI_Type_copy_attr_function *type_copy_attr_fn, MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval, void *extra_state))
MPI_LITE_FN(int, Type_free_keyval, (int *type_keyval))
MPI_LITE_FN(int, Type_set_attr, (MPI_Datatype datatype, int type_keyval, void *attribute_val))
MPI_LITE_FN(int, Type_get_attr, (MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag))
MPI_LITE_FN(int, Type_delete_attr, (MPI_Datatype datatype, int type_keyval))
MPI_LITE_FN(int, Win_create_keyval, (MPI_Win_copy_attr_function *win_copy_attr_fn, MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval, void *extra_state))
MPI_LITE_FN(int, Win_free_keyval, (int *win_keyval))
MPI_LITE_FN(int, Win_set_attr, (MPI_Win win, int win_keyval, void *attribute_val))
MPI_LITE_FN(int, Win_get_attr, (MPI_Win win, int win_keyval, void *attribute_val, int *flag))
MPI_LITE_FN(int, Win_delete_attr, (MPI_Win win, int win_keyval))
MPI_LITE_FN(int, Keyval_create, (MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval, void *extra_state))
MPI_LITE_FN(int, Keyval_free, (int *keyval))
MPI_LITE_FN(int, Attr_put, (MPI_Comm comm, int keyval, void *attribute_val))
MPI_LITE_FN(int, Attr_get, (MPI_Comm comm, int keyval, void *attribute_val, int *flag))
MPI_LITE_FN(int, Attr_delete, (MPI_Comm comm, int keyval))

/* collectives */
MPI_LITE_FN(int, Barrier, (MPI_Comm comm))
MPI_LITE_FN(int, Bcast, (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm))
MPI_LITE_FN(int, Reduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm))
MPI_LITE_FN(int, Allreduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPI_LITE_FN(int, Reduce_local, (const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op))
MPI_LITE_FN(int, Gather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm))
MPI_LITE_FN(int, Gatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm))
MPI_LITE_FN(int, Scatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm))
MPI_LITE_FN(int, Scatterv, (const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm))
MPI_LITE_FN(int, Allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Reduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPI_LITE_FN(int, Reduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPI_LITE_FN(int, Scan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPI_LITE_FN(int, Exscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPI_LITE_FN(int, Alltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm))

/* nonblocking collectives (MPI-3.1 §5.12) */
MPI_LITE_FN(int, Ibarrier, (MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ibcast, (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Igather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Igatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Iscatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Iscatterv, (const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Iallgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Iallgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ialltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ialltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ialltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ireduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Iallreduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ireduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ireduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Iscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Iexscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request))

/* neighbourhood collectives (MPI-3.1 §7.6), blocking and nonblocking */
MPI_LITE_FN(int, Neighbor_allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Neighbor_allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Neighbor_alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Neighbor_alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm))
MPI_LITE_FN(int, Neighbor_alltoallw, (const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm))
MPI_LITE_FN(int, Ineighbor_allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ineighbor_allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ineighbor_alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ineighbor_alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPI_LITE_FN(int, Ineighbor_alltoallw, (const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request))

MPI_LITE_FN(int, Op_create, (MPI_User_function *user_fn, int commute, MPI_Op *op))
MPI_LITE_FN(int, Op_free, (MPI_Op *op))
MPI_LITE_FN(int, Op_commutative, (MPI_Op op, int *commute))

/* topologies */
MPI_LITE_FN(int, Dims_create, (int nnodes, int ndims, int dims[]))
MPI_LITE_FN(int, Cart_create, (MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *comm_cart))
MPI_LITE_FN(int, Cart_coords, (MPI_Comm comm, int rank, int maxdims, int coords[]))
MPI_LITE_FN(int, Cart_rank, (MPI_Comm comm, const int coords[], int *rank))
MPI_LITE_FN(int, Cart_shift, (MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest))
MPI_LITE_FN(int, Cart_get, (MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]))
MPI_LITE_FN(int, Cartdim_get, (MPI_Comm comm, int *ndims))
MPI_LITE_FN(int, Graph_create, (MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *comm_graph))
MPI_LITE_FN(int, Graphdims_get, (MPI_Comm comm, int *nnodes, int *nedges))
MPI_LITE_FN(int, Graph_get, (MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]))
MPI_LITE_FN(int, Graph_neighbors_count, (MPI_Comm comm, int rank, int *nneighbors))
MPI_LITE_FN(int, Graph_neighbors, (MPI_Comm comm, int rank, int maxneighbors, int neighbors[]))
MPI_LITE_FN(int, Dist_graph_create, (MPI_Comm comm_old, int n, const int sources[], const int degrees[], const int destinations[], const int weights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph))
MPI_LITE_FN(int, Cart_sub, (MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm))
MPI_LITE_FN(int, Cart_map, (MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank))
MPI_LITE_FN(int, Graph_map, (MPI_Comm comm, int nnodes, const int index[], const int edges[], int *newrank))
MPI_LITE_FN(int, Topo_test, (MPI_Comm comm, int *status))
MPI_LITE_FN(int, Dist_graph_create_adjacent, (MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[], int outdegree, const int destinations[], const int destweights[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph))
MPI_LITE_FN(int, Dist_graph_neighbors_count, (MPI_Comm comm, int *indegree, int *outdegree, int *weighted))
MPI_LITE_FN(int, Dist_graph_neighbors, (MPI_Comm comm, int maxindegree, int sources[], int sourceweights[], int maxoutdegree, int destinations[], int destweights[]))

/* memory, C/Fortran handle conversion (identity: handles are integers), info objects */
MPI_LITE_FN(int, Alloc_mem, (MPI_Aint size, MPI_Info info, void *baseptr))
MPI_LITE_FN(int, Free_mem, (void *base))
MPI_LITE_FN(MPI_Fint, Comm_c2f, (MPI_Comm comm))
MPI_LITE_FN(MPI_Comm, Comm_f2c, (MPI_Fint comm))
MPI_LITE_FN(MPI_Fint, Type_c2f, (MPI_Datatype datatype))
MPI_LITE_FN(MPI_Datatype, Type_f2c, (MPI_Fint datatype))
MPI_LITE_FN(MPI_Fint, Group_c2f, (MPI_Group group))
MPI_LITE_FN(MPI_Group, Group_f2c, (MPI_Fint group))
MPI_LITE_FN(MPI_Fint, Request_c2f, (MPI_Request request))
MPI_LITE_FN(MPI_Request, Request_f2c, (MPI_Fint request))
MPI_LITE_FN(MPI_Fint, Op_c2f, (MPI_Op op))
MPI_LITE_FN(MPI_Op, Op_f2c, (MPI_Fint op))
MPI_LITE_FN(MPI_Fint, Info_c2f, (MPI_Info info))
MPI_LITE_FN(MPI_Info, Info_f2c, (MPI_Fint info))
MPI_LITE_FN(MPI_Fint, Win_c2f, (MPI_Win win))
MPI_LITE_FN(MPI_Win, Win_f2c, (MPI_Fint win))
MPI_LITE_FN(MPI_Fint, Errhandler_c2f, (MPI_Errhandler errhandler))
MPI_LITE_FN(MPI_Errhandler, Errhandler_f2c, (MPI_Fint errhandler))
MPI_LITE_FN(MPI_Fint, File_c2f, (MPI_File file))
MPI_LITE_FN(MPI_File, File_f2c, (MPI_Fint file))
MPI_LITE_FN(MPI_Fint, Message_c2f, (MPI_Message message))
MPI_LITE_FN(MPI_Message, Message_f2c, (MPI_Fint message))
MPI_LITE_FN(int, Status_c2f, (const MPI_Status *c_status, MPI_Fint *f_status))
MPI_LITE_FN(int, Status_f2c, (const MPI_Fint *f_status, MPI_Status *c_status))
MPI_LITE_FN(int, Info_create, (MPI_Info *info))
MPI_LITE_FN(int, Info_dup, (MPI_Info info, MPI_Info *newinfo))
MPI_LITE_FN(int, Info_free, (MPI_Info *info))
MPI_LITE_FN(int, Info_set, (MPI_Info info, const char *key, const char *value))
MPI_LITE_FN(int, Info_delete, (MPI_Info info, const char *key))
MPI_LITE_FN(int, Info_get, (MPI_Info info, const char *key, int valuelen, char *value, int *flag))
MPI_LITE_FN(int, Info_get_valuelen, (MPI_Info info, const char *key, int *valuelen, int *flag))
MPI_LITE_FN(int, Info_get_nkeys, (MPI_Info info, int *nkeys))
MPI_LITE_FN(int, Info_get_nthkey, (MPI_Info info, int n, char *key))

/* process creation and management (MPI-3.1 ch. 10): skifrun starts a fixed set of ranks,
 * so these fail with MPI_ERR_SPAWN naming the call; Comm_get_parent gives MPI_COMM_NULL */
MPI_LITE_FN(int, Comm_spawn, (const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]))
MPI_LITE_FN(int, Comm_spawn_multiple, (int count, char *array_of_commands[], char **array_of_argv[], const int array_of_maxprocs[], const MPI_Info array_of_info[], int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]))
MPI_LITE_FN(int, Comm_get_parent, (MPI_Comm *parent))
MPI_LITE_FN(int, Comm_disconnect, (MPI_Comm *comm))
MPI_LITE_FN(int, Open_port, (MPI_Info info, char *port_name))
MPI_LITE_FN(int, Close_port, (const char *port_name))
MPI_LITE_FN(int, Comm_accept, (const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm))
MPI_LITE_FN(int, Comm_connect, (const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm))
MPI_LITE_FN(int, Publish_name, (const char *service_name, MPI_Info info, const char *port_name))
MPI_LITE_FN(int, Unpublish_name, (const char *service_name, MPI_Info info, const char *port_name))
MPI_LITE_FN(int, Lookup_name, (const char *service_name, MPI_Info info, char *port_name))
MPI_LITE_FN(int, Comm_join, (int fd, MPI_Comm *intercomm))

/* one-sided (MPI-3): present, return MPI_ERR_UNSUPPORTED_OPERATION */
MPI_LITE_FN(int, Win_create, (void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win))
MPI_LITE_FN(int, Win_allocate, (MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win))
MPI_LITE_FN(int, Win_create_dynamic, (MPI_Info info, MPI_Comm comm, MPI_Win *win))
MPI_LITE_FN(int, Win_attach, (MPI_Win win, void *base, MPI_Aint size))
MPI_LITE_FN(int, Win_detach, (MPI_Win win, const void *base))
MPI_LITE_FN(int, Win_free, (MPI_Win *win))
MPI_LITE_FN(int, Put, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win))
MPI_LITE_FN(int, Get, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win))
MPI_LITE_FN(int, Accumulate, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win))
MPI_LITE_FN(int, Get_accumulate, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win))
MPI_LITE_FN(int, Fetch_and_op, (const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win))
MPI_LITE_FN(int, Compare_and_swap, (const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win))
MPI_LITE_FN(int, Win_fence, (int assert, MPI_Win win))
MPI_LITE_FN(int, Win_lock, (int lock_type, int rank, int assert, MPI_Win win))
MPI_LITE_FN(int, Win_unlock, (int rank, MPI_Win win))
MPI_LITE_FN(int, Win_lock_all, (int assert, MPI_Win win))
MPI_LITE_FN(int, Win_unlock_all, (MPI_Win win))
MPI_LITE_FN(int, Win_flush, (int rank, MPI_Win win))
MPI_LITE_FN(int, Win_flush_all, (MPI_Win win))
MPI_LITE_FN(int, Win_flush_local, (int rank, MPI_Win win))
MPI_LITE_FN(int, Win_flush_local_all, (MPI_Win win))
MPI_LITE_FN(int, Win_post, (MPI_Group group, int assert, MPI_Win win))
MPI_LITE_FN(int, Win_start, (MPI_Group group, int assert, MPI_Win win))
MPI_LITE_FN(int, Win_complete, (MPI_Win win))
MPI_LITE_FN(int, Win_wait, (MPI_Win win))
MPI_LITE_FN(int, Win_test, (MPI_Win win, int *flag))
MPI_LITE_FN(int, Win_sync, (MPI_Win win))
MPI_LITE_FN(int, Win_get_group, (MPI_Win win, MPI_Group *group))
MPI_LITE_FN(int, Win_set_name, (MPI_Win win, const char *win_name))
MPI_LITE_FN(int, Win_get_name, (MPI_Win win, char *win_name, int *resultlen))
MPI_LITE_FN(int, Win_set_info, (MPI_Win win, MPI_Info info))
MPI_LITE_FN(int, Win_get_info, (MPI_Win win, MPI_Info *info_used))
MPI_LITE_FN(int, Win_allocate_shared, (MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win))
MPI_LITE_FN(int, Win_shared_query, (MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr))
MPI_LITE_FN(int, Rput, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request))
MPI_LITE_FN(int, Rget, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request))
MPI_LITE_FN(int, Raccumulate, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request))
MPI_LITE_FN(int, Rget_accumulate, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request))

#undef MPI_LITE_FN

#ifdef __cplusplus
}
#endif
#endif /* SKIF_MPI_LITE_MPI_H */
