package workspace

// pythonStdlib are the top-level modules of Python's standard library, by
// name: sys.stdlib_module_names of Python 3.11, which
//
//	python3 -c 'import sys; print(*sorted(sys.stdlib_module_names))'
//
// prints, and the modules Python 3.12 to 3.14 added. Fixed code imports
// them, and they import one another, whether or not a fixed file names
// them, so a new module of such a name where the evaluation's Python looks
// first runs inside the evaluation.
var pythonStdlib = map[string]bool{
	"__future__": true, "_abc": true, "_aix_support": true, "_android_support": true, "_apple_support": true, "_ast": true,
	"_asyncio": true, "_bisect": true, "_blake2": true, "_bootsubprocess": true, "_bz2": true, "_codecs": true,
	"_codecs_cn": true, "_codecs_hk": true, "_codecs_iso2022": true, "_codecs_jp": true, "_codecs_kr": true, "_codecs_tw": true,
	"_collections": true, "_collections_abc": true, "_colorize": true, "_compat_pickle": true, "_compression": true, "_contextvars": true,
	"_crypt": true, "_csv": true, "_ctypes": true, "_curses": true, "_curses_panel": true, "_datetime": true,
	"_dbm": true, "_decimal": true, "_elementtree": true, "_frozen_importlib": true, "_frozen_importlib_external": true, "_functools": true,
	"_gdbm": true, "_hashlib": true, "_heapq": true, "_imp": true, "_interpchannels": true, "_interpqueues": true,
	"_interpreters": true, "_io": true, "_ios_support": true, "_json": true, "_locale": true, "_lsprof": true,
	"_lzma": true, "_markupbase": true, "_md5": true, "_msi": true, "_multibytecodec": true, "_multiprocessing": true,
	"_opcode": true, "_opcode_metadata": true, "_operator": true, "_osx_support": true, "_overlapped": true, "_pickle": true,
	"_posixshmem": true, "_posixsubprocess": true, "_py_abc": true, "_pydecimal": true, "_pyio": true, "_pyrepl": true,
	"_queue": true, "_random": true, "_scproxy": true, "_sha1": true, "_sha256": true, "_sha3": true,
	"_sha512": true, "_signal": true, "_sitebuiltins": true, "_socket": true, "_sqlite3": true, "_sre": true,
	"_ssl": true, "_stat": true, "_statistics": true, "_string": true, "_strptime": true, "_struct": true,
	"_suggestions": true, "_symtable": true, "_sysconfig": true, "_thread": true, "_threading_local": true, "_tkinter": true,
	"_tokenize": true, "_tracemalloc": true, "_typing": true, "_uuid": true, "_warnings": true, "_weakref": true,
	"_weakrefset": true, "_winapi": true, "_zoneinfo": true, "abc": true, "aifc": true, "annotationlib": true,
	"antigravity": true, "argparse": true, "array": true, "ast": true, "asynchat": true, "asyncio": true,
	"asyncore": true, "atexit": true, "audioop": true, "base64": true, "bdb": true, "binascii": true,
	"bisect": true, "builtins": true, "bz2": true, "cProfile": true, "calendar": true, "cgi": true,
	"cgitb": true, "chunk": true, "cmath": true, "cmd": true, "code": true, "codecs": true,
	"codeop": true, "collections": true, "colorsys": true, "compileall": true, "compression": true, "concurrent": true,
	"configparser": true, "contextlib": true, "contextvars": true, "copy": true, "copyreg": true, "crypt": true,
	"csv": true, "ctypes": true, "curses": true, "dataclasses": true, "datetime": true, "dbm": true,
	"decimal": true, "difflib": true, "dis": true, "distutils": true, "doctest": true, "email": true,
	"encodings": true, "ensurepip": true, "enum": true, "errno": true, "faulthandler": true, "fcntl": true,
	"filecmp": true, "fileinput": true, "fnmatch": true, "fractions": true, "ftplib": true, "functools": true,
	"gc": true, "genericpath": true, "getopt": true, "getpass": true, "gettext": true, "glob": true,
	"graphlib": true, "grp": true, "gzip": true, "hashlib": true, "heapq": true, "hmac": true,
	"html": true, "http": true, "idlelib": true, "imaplib": true, "imghdr": true, "imp": true,
	"importlib": true, "inspect": true, "io": true, "ipaddress": true, "itertools": true, "json": true,
	"keyword": true, "lib2to3": true, "linecache": true, "locale": true, "logging": true, "lzma": true,
	"mailbox": true, "mailcap": true, "marshal": true, "math": true, "mimetypes": true, "mmap": true,
	"modulefinder": true, "msilib": true, "msvcrt": true, "multiprocessing": true, "netrc": true, "nis": true,
	"nntplib": true, "nt": true, "ntpath": true, "nturl2path": true, "numbers": true, "opcode": true,
	"operator": true, "optparse": true, "os": true, "ossaudiodev": true, "pathlib": true, "pdb": true,
	"pickle": true, "pickletools": true, "pipes": true, "pkgutil": true, "platform": true, "plistlib": true,
	"poplib": true, "posix": true, "posixpath": true, "pprint": true, "profile": true, "pstats": true,
	"pty": true, "pwd": true, "py_compile": true, "pyclbr": true, "pydoc": true, "pydoc_data": true,
	"pyexpat": true, "queue": true, "quopri": true, "random": true, "re": true, "readline": true,
	"reprlib": true, "resource": true, "rlcompleter": true, "runpy": true, "sched": true, "secrets": true,
	"select": true, "selectors": true, "shelve": true, "shlex": true, "shutil": true, "signal": true,
	"site": true, "smtpd": true, "smtplib": true, "sndhdr": true, "socket": true, "socketserver": true,
	"spwd": true, "sqlite3": true, "sre_compile": true, "sre_constants": true, "sre_parse": true, "ssl": true,
	"stat": true, "statistics": true, "string": true, "stringprep": true, "struct": true, "subprocess": true,
	"sunau": true, "symtable": true, "sys": true, "sysconfig": true, "syslog": true, "tabnanny": true,
	"tarfile": true, "telnetlib": true, "tempfile": true, "termios": true, "textwrap": true, "this": true,
	"threading": true, "time": true, "timeit": true, "tkinter": true, "token": true, "tokenize": true,
	"tomllib": true, "trace": true, "traceback": true, "tracemalloc": true, "tty": true, "turtle": true,
	"turtledemo": true, "types": true, "typing": true, "unicodedata": true, "unittest": true, "urllib": true,
	"uu": true, "uuid": true, "venv": true, "warnings": true, "wave": true, "weakref": true,
	"webbrowser": true, "winreg": true, "winsound": true, "wsgiref": true, "xdrlib": true, "xml": true,
	"xmlrpc": true, "zipapp": true, "zipfile": true, "zipimport": true, "zlib": true, "zoneinfo": true,
}
