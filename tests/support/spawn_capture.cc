// spawnAndCapture (see spawn_capture.h).
#include "support/spawn_capture.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>

extern char** environ;

namespace accl::test {

SpawnResult spawnAndCapture(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                            const std::string& outFile) {
  std::vector<std::string> envWords;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& o : env) replaced |= entry.compare(0, o.find('=') + 1, o, 0, o.find('=') + 1) == 0;
    if (!replaced) envWords.push_back(entry);
  }
  for (const std::string& o : env)
    if (!o.empty() && o.back() != '=') envWords.push_back(o);
  std::vector<std::string> argWords = argv;
  std::vector<char*> args, envp;
  for (std::string& w : argWords) args.push_back(w.data());
  args.push_back(nullptr);
  for (std::string& w : envWords) envp.push_back(w.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, outFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  SpawnResult r;
  pid_t pid = 0;
  if (!args.empty() && args[0] && posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data()) == 0) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  std::ifstream in(outFile);
  r.out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  unlink(outFile.c_str());
  return r;
}

}  // namespace accl::test
