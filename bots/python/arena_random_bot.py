#!/usr/bin/env python3
"""arena_random_bot.py - a random player for all four arena games (Connect6, Hex, Surakarta,
Tibetan Jiu), speaking the arena's wire protocol v1 over TCP. Python 3 standard library only.

This is the starting point for your own bot: the networking and the board bookkeeping are done;
replace `choose_move` with something clever.

    python3 arena_random_bot.py --host 127.0.0.1 --port 7000 --name mybot --token s3cret \
        --games connect6,hex,surakarta,jiu

How the protocol works (see PROTOCOL.md): every message is one JSON object on one line.
  we send     {"type":"hello","protocol":1,"name":...,"token":...,"games":[...]}
  referee     {"type":"welcome",...}
  referee     {"type":"start","match":ID,"game":...,"side":"first"|"second","moves":[...],...}
  referee     {"type":"turn","match":ID,"moves":[opponent moves since our last turn],"ply":N,...}
  we send     {"type":"move","match":ID,"move":"F6"}       (or {"type":"resign","match":ID})
  referee     {"type":"end","match":ID,"result":"win"|"loss"|"draw","reason":...}
  referee     {"type":"ping","id":N}  ->  we send {"type":"pong","id":N}

Points are written column letter + row number, row 1 at the bottom: "J10". Move texts
(NOTATION.md): Connect6 "J10" or "J10,K11"; Hex "F6" or "swap"; Surakarta "B2-C3" (step) or
"B2xE5" (capture); Jiu "G7" (placement), "G7-G8" (step or fly), "G7xG9xI9" (jump chain), each
followed by "+P" for every enemy stone removed by a square.
"""

import argparse
import json
import random
import socket
import sys

BOARD_SIZE = {"connect6": 19, "hex": 11, "surakarta": 6, "jiu": 14}
# Jiu: the stones on these two points are removed when the placement phase fills the board.
JIU_CENTRE = ((6, 6), (7, 7))  # G7 and H8 (0-based column, row)
JIU_POINTS = 14 * 14


def parse_point(text):
    """'J10' -> (9, 9): 0-based column and row (row 0 is the bottom row, '1')."""
    text = text.strip().upper()
    return ord(text[0]) - ord("A"), int(text[1:]) - 1


def point_name(point):
    """(9, 9) -> 'J10'."""
    col, row = point
    return "%s%d" % (chr(ord("A") + col), row + 1)


class Board:
    """One game's position, kept up to date from the move lists the referee sends.

    `stones` maps (col, row) to "first" or "second". `ply` counts the moves played so far.
    """

    def __init__(self, game, my_side):
        self.game = game
        self.size = BOARD_SIZE[game]
        self.me = my_side
        self.stones = {}
        self.ply = 0
        self.jiu_battle = False
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
        if "-" in action:  # step or fly
            start, end = (parse_point(p) for p in action.split("-"))
            del self.stones[start]
            self.stones[end] = who
        elif "X" in action:  # jump chain: every landing point is listed
            path = [parse_point(p) for p in action.split("X")]
            for (c1, r1), (c2, r2) in zip(path, path[1:]):
                self.stones.pop(((c1 + c2) // 2, (r1 + r2) // 2), None)  # the jumped stone
            del self.stones[path[0]]
            self.stones[path[-1]] = who
        else:  # placement
            self.stones[parse_point(action)] = who
            if len(self.stones) == JIU_POINTS:
                for p in JIU_CENTRE:
                    self.stones.pop(p, None)
                self.jiu_battle = True
        for victim in victims:
            self.stones.pop(parse_point(victim), None)

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
            return self.random_jiu_battle_move(empty)
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

    def random_jiu_battle_move(self, empty):
        mine = [p for p, owner in self.stones.items() if owner == self.me]
        moves = []
        for (col, row) in mine:
            for dc, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                to = (col + dc, row + dr)
                if self.on_board(to) and to not in self.stones:
                    moves.append(((col, row), to))
        if not moves and len(mine) <= 14:
            # Flying: with 14 stones or fewer a stone may move to any empty point.
            moves = [(p, to) for p in mine for to in empty]
        jumped = None
        if not moves and len(mine) > 14 and len(self.stones) - len(mine) > 14:
            # No step (the board is nearly full when the battle starts): a single jump over an
            # enemy stone to the empty point beyond, allowed while both sides have over 14.
            jumps = []
            for (col, row) in mine:
                for dc, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    over, to = (col + dc, row + dr), (col + 2 * dc, row + 2 * dr)
                    if (self.stones.get(over) not in (None, self.me)
                            and self.on_board(to) and to not in self.stones):
                        jumps.append(((col, row), to, over))
            if jumps:
                start, end, jumped = random.choice(jumps)
                moves = [(start, end)]
        if not moves:
            return None
        start, end = random.choice(moves)
        text = "%s%s%s" % (point_name(start), "x" if jumped else "-", point_name(end))
        # Square capture: every 2x2 square of our stones made at `end` removes one enemy stone.
        after = dict(self.stones)
        del after[start]
        if jumped:
            del after[jumped]
        after[end] = self.me
        enemies = [p for p, owner in after.items() if owner != self.me]
        squares = self.squares_at(after, end)
        for victim in random.sample(enemies, min(squares, len(enemies))):
            text += "+" + point_name(victim)
        return text

    def squares_at(self, stones, point):
        """How many 2x2 squares of our stones contain `point`."""
        col, row = point
        count = 0
        for c0 in (col - 1, col):
            for r0 in (row - 1, row):
                corners = [(c0, r0), (c0 + 1, r0), (c0, r0 + 1), (c0 + 1, r0 + 1)]
                if all(stones.get(p) == self.me for p in corners):
                    count += 1
        return count

    def on_board(self, point):
        return 0 <= point[0] < self.size and 0 <= point[1] < self.size


def main():
    parser = argparse.ArgumentParser(description="Random arena bot (protocol v1).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--games", default="connect6,hex,surakarta,jiu",
                        help="comma-separated game ids")
    parser.add_argument("--max-games", type=int, default=1,
                        help="matches the referee may give us at once")
    parser.add_argument("--seed", type=int, default=None, help="random seed (reproducible play)")
    args = parser.parse_args()
    random.seed(args.seed)

    sock = socket.create_connection((args.host, args.port))
    # Send each small message at once (no Nagle delay): our clock runs until the move arrives.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reader = sock.makefile("r", encoding="utf-8", newline="\n")

    def send(message):
        sock.sendall((json.dumps(message) + "\n").encode("utf-8"))

    send({
        "type": "hello",
        "protocol": 1,
        "name": args.name,
        "token": args.token,
        "games": args.games.split(","),
        "max_games": args.max_games,
        "engine": "arena_random_bot.py",
    })

    boards = {}  # match id -> Board
    for line in reader:
        try:
            message = json.loads(line)
        except ValueError:
            print("unreadable line from the referee: %r" % line, file=sys.stderr)
            continue
        kind = message.get("type")
        if kind == "welcome":
            print("welcomed by %s" % message.get("server"), file=sys.stderr)
        elif kind == "ping":
            send({"type": "pong", "id": message["id"]})
        elif kind == "start":
            board = Board(message["game"], message["side"])
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
        elif kind == "error":
            print("referee error %s: %s" % (message.get("code"), message.get("message")),
                  file=sys.stderr)
    sock.close()


if __name__ == "__main__":
    main()
