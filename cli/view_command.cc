// `gulpdb view`: serves the dataset viewer (view/view.h) until Ctrl-C or
// SIGTERM, or writes its static report with --static. The server's address
// is the first line of standard output, flushed at once, so that a program
// that starts the command reads it there.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli/command_families.h"
#include "cli/options.h"
#include "cli/text.h"
#include "gulpdb/error.h"
#include "gulpdb/remote.h"
#include "view/view.h"

extern char** environ;

namespace gulpdb::cli {
namespace {

namespace po = boost::program_options;

// Signals that stop the server: blocked in every thread (they inherit the
// mask from here) and taken by sigwait in the main thread.
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// Starts `xdg-open URL` (or $BROWSER URL), not waited for; false when it
// cannot be started.
bool OpenBrowser(const std::string& url, std::string* why) {
  const char* browser = std::getenv("BROWSER");
  const std::string program = browser != nullptr && *browser != '\0' ? browser : "xdg-open";
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);  // the browser takes Ctrl-C as it likes
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), const_cast<char*>(url.c_str()),
                             nullptr};
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, program.c_str(), nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    *why = program + ": " + std::strerror(err);
    return false;
  }
  return true;
}

view::ShowOptions ShowOptionsOf(const po::variables_map& vm) {
  view::ShowOptions show;
  show.label_key = vm["label-key"].as<std::string>();
  if (show.label_key.empty()) throw UsageError("--label-key is empty");
  show.thumb_side =
      static_cast<int>(*UnsignedOption(vm, "thumb-size", view::kMinThumbSide, view::kMaxThumbSide));
  return show;
}

int WriteReport(const Dataset& dataset, const po::variables_map& vm) {
  view::StaticReportOptions options;
  options.show = ShowOptionsOf(vm);
  options.limit = *UnsignedOption(vm, "limit", 1, 1000000);
  if (vm.count("where") != 0) options.where = vm["where"].as<std::string>();
  if (vm.count("version") != 0) options.version = vm["version"].as<std::string>();
  const std::string out = vm["static"].as<std::string>();
  const view::StaticReport report = view::WriteStaticReport(dataset, out, options);
  std::printf("%s/index.html\n", out.c_str());
  std::fprintf(
      stderr, "gulpdb view: %llu of %llu matching videos on the sheet%s\n",
      static_cast<unsigned long long>(report.shown),
      static_cast<unsigned long long>(report.matched),
      report.damaged != 0 ? (" (" + std::to_string(report.damaged) + " damaged)").c_str() : "");
  return 0;
}

}  // namespace

int RunView(const std::vector<std::string>& args) {
  po::options_description o("view options");
  bool no_browser = false;
  o.add_options()("dir", po::value<std::string>(), kReadableDir)(
      "host", po::value<std::string>()->default_value("127.0.0.1"),
      "address to listen on (anything but a loopback address reaches other machines: a "
      "warning is printed, and the token is still needed)")("port", NumberValue("0"),
                                                            "port to listen on (0: a free one)")(
      "no-browser", po::bool_switch(&no_browser), "do not open a browser")(
      "label-key", po::value<std::string>()->default_value("label"),
      "the meta key shown as each video's label and charted")(
      "thumb-size", NumberValue("160"), "longest side of a thumbnail in pixels (16-1024)")(
      "static", po::value<std::string>(),
      "write the static report into OUT (a new or empty directory) instead of serving")(
      "where", po::value<std::string>(),
      "with --static: the videos that match a query (as ls --where)")(
      "limit", NumberValue("200"), "with --static: at most N videos on the sheet");
  AddIndexDirOption(&o);
  AddVersionOption(&o);
  const po::variables_map vm =
      Parse(args,
            "gulpdb view DIR [--host 127.0.0.1] [--port 0] [--no-browser] [--label-key label]\n"
            "          [--thumb-size 160] [--index-dir PATH] [--version NAME]\n"
            "   or: gulpdb view DIR --static OUT [--where EXPR] [--limit 200] [--version NAME]\n\n"
            "Serves a read-only web page for browsing the dataset (DIR, or s3://BUCKET/PREFIX):\n"
            "a grid of thumbnails that play on hover, a filter, splits, charts, and a page per\n"
            "video that plays its frames and shows their check status. Prints the page's\n"
            "address, http://HOST:PORT/?token=TOKEN, as the first line of standard output,\n"
            "then opens a browser (unless --no-browser). Every request needs the token (the\n"
            "page keeps it in a cookie). Ctrl-C or SIGTERM stops it. With --static OUT it\n"
            "writes OUT/index.html and OUT/thumbs/ instead: a contact sheet that opens from\n"
            "disk; a failure leaves nothing behind. --version NAME shows the version tagged\n"
            "NAME (gulpdb tag); the page's version selector switches to HEAD or another tag.",
            o, {"dir"});
  RequireNonEmpty(vm, {"static", "where", "host"});
  const bool report = vm.count("static") != 0;
  for (const char* name : {"where", "limit"}) {
    if (!report && Given(vm, name)) throw UsageError(std::string("--") + name + " needs --static");
  }
  for (const char* name : {"host", "port", "no-browser"}) {
    if (report && (Given(vm, name) || (std::string(name) == "no-browser" && no_browser))) {
      throw UsageError(std::string("--") + name + " does not go with --static");
    }
  }
  const DatasetPath path = DatasetArg(vm);
  OpenOptions open;
  open.verify_checksums = true;  // a damaged frame is shown as damaged, not as garbage
  view::ServerOptions options;
  options.host = vm["host"].as<std::string>();
  options.port = static_cast<int>(*UnsignedOption(vm, "port", 0, 65535));
  options.show = ShowOptionsOf(vm);
  options.version = path.version;
  // The page's version selector opens the others as this one was opened.
  options.open_version = [path, open](const std::string& name) -> std::shared_ptr<const Dataset> {
    DatasetPath other = path;
    other.version = name == "HEAD" ? "" : name;
    return OpenDataset(other, /*read_only=*/true, open);
  };
  if (report) (void)UnsignedOption(vm, "limit", 1, 1000000);  // before opening the dataset

  if (report) return WriteReport(*OpenDataset(path, /*read_only=*/true, open), vm);

  // Before any thread starts (the dataset's own included): they inherit the mask.
  const sigset_t stop = StopSignals();
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::shared_ptr<const Dataset> dataset = OpenDataset(path, /*read_only=*/true, open);
  if (!view::IsLoopbackHost(options.host)) {
    Warn("view", "listening on " + options.host +
                     ", which is not a loopback address: anyone who can reach it and learns the "
                     "address with its token can read the dataset");
  }
  const std::unique_ptr<view::Server> server = view::Server::Start(dataset, options);
  std::printf("%s\n", server->url().c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "gulpdb view: serving %s%s (%llu videos); Ctrl-C stops\n",
               EscapeControls(dataset->dir()).c_str(),
               path.version.empty() ? "" : (" version " + EscapeForDisplay(path.version)).c_str(),
               static_cast<unsigned long long>(dataset->Count()));
  std::string why;
  if (!no_browser && !OpenBrowser(server->url(), &why)) {
    std::fprintf(stderr, "gulpdb view: could not open a browser (%s): open the address above\n",
                 why.c_str());
  }
  int signal = 0;
  while (sigwait(&stop, &signal) != 0) {
  }
  server->Stop();
  std::fprintf(stderr, "gulpdb view: stopped (%s)\n", strsignal(signal));
  return 0;
}

}  // namespace gulpdb::cli
