#!/usr/bin/env python3
"""arena_random_bot.py - a random player for all four arena games (Connect6, Hex, Surakarta,
Tibetan Jiu), speaking the arena's wire protocol v1 over TCP, or on stdin/stdout (--stdio).
Python 3 standard library only.

This is the starting point for your own bot: the networking and the board bookkeeping are done;
replace `choose_move` with something clever.

    python3 arena_random_bot.py --host 127.0.0.1 --port 7000 --name mybot \
        --token-file mybot.token --games connect6,hex,surakarta,jiu

The token is read from --token-file (its first line), else from the ARENA_TOKEN environment
variable; --token TOKEN also works but shows in `ps` to everyone on the machine.

How the protocol works (see docs/protocol.md): every message is one JSON object on one line.
  we send     {"type":"hello","protocol":1,"name":...,"token":...,"games":[...]}
  referee     {"type":"welcome",...}
  referee     {"type":"start","match":ID,"game":...,"side":"first"|"second","moves":[...],...}
  referee     {"type":"turn","match":ID,"moves":[opponent moves since our last turn],"ply":N,...}
  we send     {"type":"move","match":ID,"move":"F6"}       (or {"type":"resign","match":ID})
  referee     {"type":"end","match":ID,"result":"win"|"loss"|"draw","reason":...}
  referee     {"type":"ping","id":N}  ->  we send {"type":"pong","id":N}

Points are written column letter + row number, row 1 at the bottom: "J10". Move texts
(docs/rules.md): Connect6 "J10" or "J10,K11"; Hex "F6" or "swap"; Surakarta "B2-C3" (step) or
"B2xE5" (capture); Jiu "G7" (placement), "G7-G8" (step or fly), "G7xG9xI9" (jump chain), each
followed by "+P" for every enemy stone removed by a square.

If the referee goes away (a server restart), the bot connects again, waiting 0.25 s, then
0.5 s, 1 s, ... up to 5 s between attempts, for --reconnect-for-ms (default 60 s) after it lost
the referee; the referee then sends `start` again with the moves so far. A refused hello
(wrong name or token) is not retried, and when the referee says the league is over (`error`
with code `league_over`) the bot says so and stops.

Run by the arena server itself, as a `program` bot, it plays the same messages on stdin and
stdout instead (the server logs in for it, so no --port, --name or --token; see docs/bots.md):

    python3 arena_random_bot.py --stdio --games hex

Changed the Jiu move generator? Check it against the referee's rules (see `selftest`):
    python3 arena_random_bot.py --selftest 20 | arena replay jiu
"""

import argparse
import io
import json
import os
import random
import socket
import sys
import time

BOARD_SIZE = {"connect6": 19, "hex": 11, "surakarta": 6, "jiu": 14}
# Jiu: the stones on these two points are removed when the placement phase fills the board.
JIU_CENTRE = ((6, 6), (7, 7))  # G7 and H8 (0-based column, row)
JIU_POINTS = 14 * 14
JIU_FLYING_STONES = 14  # a side with this many stones or fewer flies instead of stepping
JIU_FEW_STONES = 3  # a side left with this many stones or fewer has lost
# Up, down, left, right as (column, row) steps.
DIRECTIONS = ((0, 1), (0, -1), (-1, 0), (1, 0))


def parse_point(text):
    """'J10' -> (9, 9): 0-based column and row (row 0 is the bottom row, '1')."""
    text = text.strip().upper()
    return ord(text[0]) - ord("A"), int(text[1:]) - 1


def point_name(point):
    """(9, 9) -> 'J10'."""
    col, row = point
    return "%s%d" % (chr(ord("A") + col), row + 1)


def opponent(side):
    """'first' -> 'second' and back."""
    return "second" if side == "first" else "first"


class Board:
    """One game's position, kept up to date from the move lists the referee sends.

    `stones` maps (col, row) to "first" or "second". `ply` counts the moves played so far.
    `rules` holds the rule options from the `start` message (e.g. Jiu's "flying_single_jump").
    """

    def __init__(self, game, my_side, rules=None):
        self.game = game
        self.size = BOARD_SIZE[game]
        self.me = my_side
        self.rules = rules or {}
        self.stones = {}
        self.ply = 0
        self.jiu_battle = False
        self.quiet = 0  # Jiu: battle plies in a row without a capture
        if game == "surakarta":
            # The first side fills rows 1-2, the second rows 5-6.
            for col in range(6):
                for row in (0, 1):
                    self.stones[(col, row)] = "first"
                for row in (4, 5):
                    self.stones[(col, row)] = "second"

    # ---- bookkeeping -------------------------------------------------------------------

    def mover(self, ply):
        """Who plays move number `ply` (0-based)."""
        if self.game == "jiu" and ply >= JIU_POINTS:
            # After 196 placements the battle starts, and Black (second) moves first.
            return "second" if (ply - JIU_POINTS) % 2 == 0 else "first"
        return "first" if ply % 2 == 0 else "second"

    def empty_points(self):
        return [
            (c, r)
            for c in range(self.size)
            for r in range(self.size)
            if (c, r) not in self.stones
        ]

    def apply(self, move):
        """Plays one move text for whoever is to move."""
        who = self.mover(self.ply)
        self.ply += 1
        if self.game == "connect6":
            for stone in move.split(","):
                self.stones[parse_point(stone)] = who
        elif self.game == "hex":
            if move.strip().lower() == "swap":
                # The first stone is replaced by the mirror image in the second side's colour.
                (col, row), = list(self.stones)
                del self.stones[(col, row)]
                self.stones[(10 - row, 10 - col)] = who
            else:
                self.stones[parse_point(move)] = who
        elif self.game == "surakarta":
            sep = "x" if "x" in move.lower() else "-"
            start, end = move.lower().split(sep)
            start, end = parse_point(start), parse_point(end)
            del self.stones[start]
            self.stones[end] = who  # a capture simply replaces the enemy piece
        elif self.game == "jiu":
            self.apply_jiu(move, who)

    def apply_jiu(self, move, who):
        parts = move.upper().split("+")
        action, victims = parts[0], parts[1:]
        if not self.jiu_battle:  # placement
            self.stones[parse_point(action)] = who
            if len(self.stones) == JIU_POINTS:
                for p in JIU_CENTRE:
                    self.stones.pop(p, None)
                self.jiu_battle = True
            return
        before = len(self.stones)
        if "-" in action:  # step or fly
            start, end = (parse_point(p) for p in action.split("-"))
            del self.stones[start]
            self.stones[end] = who
        else:  # jump chain "G7xG9xI9": every landing point is listed
            path = [parse_point(p) for p in action.split("X")]
            for (c1, r1), (c2, r2) in zip(path, path[1:]):
                self.stones.pop(((c1 + c2) // 2, (r1 + r2) // 2), None)  # the jumped stone
            del self.stones[path[0]]
            self.stones[path[-1]] = who
        for victim in victims:  # the enemy stones the squares removed
            self.stones.pop(parse_point(victim), None)
        captured = len(self.stones) < before
        self.quiet = 0 if captured else self.quiet + 1

    # ---- the policy: replace this with something better ---------------------------------

    def choose_move(self):
        """Returns a move text for our side, or None if we find nothing (we then resign)."""
        empty = self.empty_points()
        if self.game == "connect6":
            count = 1 if self.ply == 0 else 2  # Black's opening move is a single stone
            if len(empty) < count:
                count = len(empty)
            if count == 0:
                return None
            return ",".join(point_name(p) for p in random.sample(empty, count))
        if self.game == "hex":
            return point_name(random.choice(empty)) if empty else None
        if self.game == "surakarta":
            return self.random_surakarta_step()
        if self.game == "jiu":
            if not self.jiu_battle:
                return self.jiu_placement(empty)
            return self.random_jiu_battle_move()
        return None

    def random_surakarta_step(self):
        steps = []
        for (col, row), owner in self.stones.items():
            if owner != self.me:
                continue
            for dc in (-1, 0, 1):
                for dr in (-1, 0, 1):
                    to = (col + dc, row + dr)
                    if (dc or dr) and self.on_board(to) and to not in self.stones:
                        steps.append(((col, row), to))
        if not steps:
            return None
        start, end = random.choice(steps)
        return "%s-%s" % (point_name(start), point_name(end))

    def jiu_placement(self, empty):
        # The first two placements are forced: the ends of the centre diagonal, G7 and H8.
        for p in JIU_CENTRE:
            if self.ply < 2 and p not in self.stones:
                return point_name(p)
        return point_name(random.choice(empty)) if empty else None

    def random_jiu_battle_move(self):
        actions = self.jiu_battle_actions(self.me)
        if not actions:
            return None  # never happens in a match: the referee ends the game (no_moves) first
        path, jumped = random.choice(actions)
        return self.jiu_move_text(self.me, path, jumped)

    def jiu_battle_actions(self, side):
        """Every battle move of `side`, square victims not yet chosen, as (path, jumped) pairs:
        `path` lists the points the stone visits, [start, end] for a step or fly and
        [start, landing, landing, ...] for a jump chain; `jumped` lists the enemy stones a chain
        jumps over (empty for a step or fly)."""
        mine = [p for p, owner in self.stones.items() if owner == side]
        enemies = len(self.stones) - len(mine)
        flying = len(mine) <= JIU_FLYING_STONES
        # While either side has 14 stones or fewer, a jump must chain at least two jumps,
        # unless the rule option `flying_single_jump` (from the `start` message) says otherwise.
        if self.rules.get("flying_single_jump") or min(len(mine), enemies) > JIU_FLYING_STONES:
            shortest_chain = 1
        else:
            shortest_chain = 2
        empty = self.empty_points() if flying else []
        board = dict(self.stones)  # scratch copy for the jump search
        actions = []
        for start in mine:
            if flying:  # fly: to any empty point (a neighbour included), instead of a step
                targets = empty
            else:  # step: to an empty neighbour
                targets = [p for p in self.neighbours(start) if p not in self.stones]
            actions.extend(([start, to], []) for to in targets)
            del board[start]  # the jumping stone leaves its point
            self.add_jump_chains(board, side, [start], [], shortest_chain, actions)
            board[start] = side
        return actions

    def add_jump_chains(self, board, side, path, jumped, shortest_chain, actions):
        """Depth-first search of the jump chains that continue `path` (the points visited so
        far, the start first) on `board`, from which the jumping stone and the stones it jumped
        are gone. Appends every chain of at least `shortest_chain` jumps to `actions`: stopping
        early is allowed, so each prefix of a longer chain is a move of its own."""
        col, row = path[-1]
        for dc, dr in DIRECTIONS:
            over = (col + dc, row + dr)
            land = (col + 2 * dc, row + 2 * dr)
            if (board.get(over) not in (None, side)  # an enemy stone to jump over
                    and self.on_board(land) and land not in board  # an empty point beyond it
                    and land not in path):  # never land where the chain has been (start too)
                del board[over]  # the jumped stone is removed at once
                longer_path, longer_jumped = path + [land], jumped + [over]
                if len(longer_jumped) >= shortest_chain:
                    actions.append((longer_path, longer_jumped))
                self.add_jump_chains(board, side, longer_path, longer_jumped, shortest_chain,
                                     actions)
                board[over] = opponent(side)  # back again for the other branches

    def jiu_move_text(self, side, path, jumped):
        """The text of a battle move ("G7-G8", "G7xG9xI9"), with a random enemy stone named
        ("+B3") for every 2x2 square of `side`'s stones it forms at the point where it ends."""
        after, victims = self.jiu_after_move(side, path, jumped)
        enemies = [p for p, owner in after.items() if owner != side]
        text = ("x" if jumped else "-").join(point_name(p) for p in path)
        return text + "".join("+" + point_name(v) for v in random.sample(enemies, victims))

    def jiu_after_move(self, side, path, jumped):
        """The stones after a battle move of `side` (the stone moved, the jumped stones gone)
        and how many enemy stones its squares remove: one per square formed at the end point,
        or all the enemy stones if fewer are left."""
        after = dict(self.stones)
        del after[path[0]]
        for p in jumped:
            del after[p]
        after[path[-1]] = side
        enemies = sum(1 for owner in after.values() if owner != side)
        return after, min(self.squares_at(after, path[-1], side), enemies)

    def squares_at(self, stones, point, side):
        """How many 2x2 squares of `side`'s stones contain `point`."""
        col, row = point
        count = 0
        for c0 in (col - 1, col):
            for r0 in (row - 1, row):
                corners = [(c0, r0), (c0 + 1, r0), (c0, r0 + 1), (c0 + 1, r0 + 1)]
                if all(stones.get(p) == side for p in corners):
                    count += 1
        return count

    def jiu_result(self):
        """Whether the Jiu battle is over for the side to move: the reason ("few_stones",
        "move_limit" or "no_moves", checked in this order) or None. In a match the referee
        decides this; the self-test (--selftest) needs it to know when a game ends."""
        if not self.jiu_battle:
            return None
        to_move = self.mover(self.ply)
        if sum(1 for owner in self.stones.values() if owner == to_move) <= JIU_FEW_STONES:
            return "few_stones"
        if self.quiet >= self.rules.get("no_capture_limit", 100):
            return "move_limit"
        if not self.jiu_battle_actions(to_move):
            return "no_moves"
        return None

    def neighbours(self, point):
        """The points up, down, left and right of `point` that are on the board."""
        col, row = point
        return [(col + dc, row + dr) for dc, dr in DIRECTIONS
                if self.on_board((col + dc, row + dr))]

    def on_board(self, point):
        return 0 <= point[0] < self.size and 0 <= point[1] < self.size


def selftest(games, rules):
    """Plays `games` random games of Jiu against itself and prints each game's moves on one
    line, to check this move generator against the referee's rules:

        python3 arena_random_bot.py --selftest 20 | arena replay jiu

    must print no `illegal` line, and each game must end at its last move. With --rules,
    give `arena replay` the same --rules."""
    for _ in range(games):
        board = Board("jiu", "first", rules)
        moves = []
        while board.jiu_result() is None:
            board.me = board.mover(board.ply)  # play both sides
            move = board.choose_move()
            if move is None:
                break
            board.apply(move)
            moves.append(move)
        print(" ".join(moves), flush=True)


def main():
    parser = argparse.ArgumentParser(description="Random arena bot (protocol v1).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int)
    parser.add_argument("--name")
    parser.add_argument("--token", help="visible in `ps`: prefer --token-file or ARENA_TOKEN")
    parser.add_argument("--token-file", help="a file whose first line is the token")
    parser.add_argument("--games", default="connect6,hex,surakarta,jiu",
                        help="comma-separated game ids")
    parser.add_argument("--max-games", type=int, default=1,
                        help="matches the referee may give us at once")
    parser.add_argument("--seed", type=int, default=None, help="random seed (reproducible play)")
    parser.add_argument("--reconnect-for-ms", type=int, default=60000,
                        help="after losing the referee, keep reconnecting this long (0: stop)")
    parser.add_argument("--stdio", action="store_true",
                        help="play on stdin/stdout instead of connecting: run as a program bot "
                             "(`program = \"json:...\"` in the arena's config) or through "
                             "`arena connect --protocol json`")
    parser.add_argument("--selftest", type=int, metavar="N",
                        help="play N games of Jiu against itself, print their moves and exit")
    parser.add_argument("--rules", default="{}",
                        help="Jiu rule options (JSON) for --selftest; in a match they come "
                             "from the referee's start message")
    args = parser.parse_args()
    random.seed(args.seed)
    if args.selftest is not None:
        selftest(args.selftest, json.loads(args.rules))
        return
    if args.stdio:
        play_stdio(args)
        return
    if args.token is None and args.token_file is not None:
        try:
            with open(args.token_file, encoding="utf-8") as f:
                args.token = (f.readline() or "").strip()
        except OSError as e:
            parser.error("cannot read the token file: %s" % e)
    if args.token is None:
        args.token = os.environ.get("ARENA_TOKEN") or None
    if args.port is None or args.name is None or not args.token:
        parser.error("--port, --name and a token (--token-file FILE or ARENA_TOKEN) are "
                     "required to play over TCP (or --stdio)")

    gone_since = None
    backoff = 0.25
    while True:
        try:
            welcomed, refused = connect_and_play(args)
        except OSError as error:  # cannot connect, or the connection broke
            print("connection to the referee failed: %s" % error, file=sys.stderr)
            welcomed, refused = False, False
        if refused == "league over":
            return
        if refused:
            sys.exit(1)
        if welcomed:
            gone_since, backoff = None, 0.25
        now = time.monotonic()
        if gone_since is None:
            gone_since = now
        if (now - gone_since) * 1000 >= args.reconnect_for_ms:
            print("the referee has been gone too long; giving up", file=sys.stderr)
            return
        print("lost the referee; reconnecting in %.2f s" % backoff, file=sys.stderr)
        time.sleep(backoff)
        backoff = min(backoff * 2, 5.0)


def connect_and_play(args):
    """One TCP connection to the referee: hello, then play until the referee closes it.
    Returns what `play` returns."""
    sock = socket.create_connection((args.host, args.port))
    # Send each small message at once (no Nagle delay): our clock runs until the move arrives.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = sock.makefile("r", encoding="utf-8", newline="\n")

    def send(message):
        sock.sendall((json.dumps(message) + "\n").encode("utf-8"))

    try:
        return play(args, reader, send, "%s:%s" % (args.host, args.port))
    finally:
        sock.close()


def play_stdio(args):
    """Plays as a program engine: the same messages on stdin and stdout, one JSON object per
    line. The arena server (or `arena connect`) starts us and logs in for us, so our name and
    token are not checked. Everything else we print goes to stderr."""
    reader = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline="\n")
    out = sys.stdout

    def send(message):
        out.write(json.dumps(message) + "\n")
        out.flush()  # our clock runs until the move arrives

    play(args, reader, send, "stdin")


def play(args, reader, send, peer):
    """Says hello with `send`, then plays the referee's messages read from `reader` (lines)
    until it ends. `peer` names where they come from, for messages. Returns (welcomed,
    refused): whether the referee accepted us, and whether it refused our hello for good
    ("league over" when it said the league is over)."""
    hello = {
        "type": "hello",
        "protocol": 1,
        "name": args.name or "arena_random_bot",
        "token": args.token or "",
        "games": args.games.split(","),
        "max_games": args.max_games,
        "engine": "arena_random_bot.py",
    }
    # The ticket of an earlier welcome: with it, a reconnect is never held back by someone
    # trying to guess our token at the same time.
    if getattr(args, "ticket", None):
        hello["ticket"] = args.ticket
    send(hello)

    welcomed = False
    boards = {}  # match id -> Board
    for line in reader:
        if line.startswith("HTTP/"):
            print("%s is a web server (it answered %r), not the referee: probably the web "
                  "view's port. Connect to the referee's address, server.listen in the arena's "
                  "config (port 7878 by default)" % (peer, line.strip()),
                  file=sys.stderr)
            return False, True
        try:
            message = json.loads(line)
        except ValueError:
            print("unreadable line from the referee: %r" % line, file=sys.stderr)
            continue
        kind = message.get("type")
        if kind == "welcome":
            welcomed = True
            if message.get("ticket"):
                args.ticket = message["ticket"]
            print("welcomed by %s" % message.get("server"), file=sys.stderr)
        elif kind == "ping":
            send({"type": "pong", "id": message["id"]})
        elif kind == "start":
            board = Board(message["game"], message["side"], message.get("rules"))
            for move in message["moves"]:  # non-empty when a game resumes
                board.apply(move)
            boards[message["match"]] = board
            print("match %s: %s as %s against %s" % (
                message["match"], message["game"], message["side"], message["opponent"]),
                file=sys.stderr)
        elif kind == "turn":
            match = message["match"]
            board = boards.get(match)
            if board is None:
                continue
            # `moves` are the moves since our last turn; `ply` counts all moves so far.
            if board.ply + len(message["moves"]) != message["ply"]:
                print("warning: lost track of match %s" % match, file=sys.stderr)
            for move in message["moves"]:
                board.apply(move)
            move = board.choose_move()
            if move is None:
                send({"type": "resign", "match": match})
            else:
                board.apply(move)  # the referee does not echo our own moves back
                send({"type": "move", "match": match, "move": move})
        elif kind == "end":
            boards.pop(message["match"], None)
            print("match %s: %s by %s" % (message["match"], message["result"],
                                          message["reason"]), file=sys.stderr)
        elif kind == "error" and message.get("code") == "league_over":
            print("the league is over: %s; stopping" % message.get("message"), file=sys.stderr)
            return welcomed, "league over"
        elif kind == "error":
            print("referee error %s: %s" % (message.get("code"), message.get("message")),
                  file=sys.stderr)
            # Another copy of this bot logged in and took its seat (the newest login wins):
            # logging in again would only take it back, so this copy stops.
            if message.get("code") == "replaced":
                return welcomed, True
            # Refused before the welcome: retrying the same hello would not help (except
            # when our previous connection is not gone yet, or the referee asks us to retry
            # because someone is guessing our token).
            if not welcomed and message.get("code") not in ("already_connected",
                                                             "login_throttled"):
                return False, True
    return welcomed, False


if __name__ == "__main__":
    main()
