/*
 * connect6_sau.c - a minimal Connect6 engine speaking the contest's common "sau" text protocol
 * on stdin/stdout. A starting point for students, not a strong player.
 *
 * Build:  cc -O2 -o connect6_sau connect6_sau.c        (C99, standard library only)
 * Play:   arena connect --server HOST:PORT --name N --token T --protocol sau -- ./connect6_sau
 *
 * Protocol (one command per line):
 *   new black | new white   a new game; as black we place our single opening stone at once
 *   move XY | move XYXY     the opponent placed one or two stones; we answer with our move
 *   black XY.. | white XY.. set up: place stones of that colour without answering (an opening,
 *                           or a game resumed mid-way); the colour placed last becomes ours
 *   next                    play for the colour that did not place the last stones (becomes ours)
 *   name?                   we answer "name connect6_sau"
 *   end | quit              stop
 * A point is two letters A-S: column then row, row A at the bottom (contest J10 is "JJ").
 * We answer "move XYXY" (two stones), or "move XY" for the opening stone (or when only one
 * empty point is left).
 *
 * Policy: win at once if two stones can complete six; otherwise block an opponent line that
 * two stones could complete; otherwise place next to existing stones (own or opponent) at
 * random; on an empty board, the centre.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 19
#define EMPTY 0
#define BLACK 1
#define WHITE 2

static int board[N][N]; /* board[col][row], row 0 is the bottom row (letter A) */
static int me = BLACK;

static int on_board(int c, int r) { return c >= 0 && c < N && r >= 0 && r < N; }

static int other(int colour) { return colour == BLACK ? WHITE : BLACK; }

/* Reads a point "XY" into (c, r); returns 0 if it is not two letters A-S. */
static int parse_point(const char *s, int *c, int *r) {
    int x = s[0], y = s[0] ? s[1] : 0;
    if (x >= 'a' && x <= 'z') x -= 'a' - 'A';
    if (y >= 'a' && y <= 'z') y -= 'a' - 'A';
    if (x < 'A' || x >= 'A' + N || y < 'A' || y >= 'A' + N) return 0;
    *c = x - 'A';
    *r = y - 'A';
    return 1;
}

static int count_empty(void) {
    int c, r, n = 0;
    for (c = 0; c < N; c++)
        for (r = 0; r < N; r++)
            if (board[c][r] == EMPTY) n++;
    return n;
}

static const int DIRS[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};

/*
 * Looks for a window of six points in a line holding only `colour` stones and empties, with at
 * least `need` stones of `colour` (so at most 6 - need empties). Writes the window's empty
 * points to out[] and returns how many there are, or -1 if there is no such window.
 */
static int find_window(int colour, int need, int out[][2]) {
    int c, r, d, k;
    for (c = 0; c < N; c++)
        for (r = 0; r < N; r++)
            for (d = 0; d < 4; d++) {
                int dc = DIRS[d][0], dr = DIRS[d][1];
                int mine = 0, empties = 0, blocked = 0;
                if (!on_board(c + 5 * dc, r + 5 * dr)) continue;
                for (k = 0; k < 6; k++) {
                    int v = board[c + k * dc][r + k * dr];
                    if (v == colour) mine++;
                    else if (v == EMPTY) {
                        out[empties][0] = c + k * dc;
                        out[empties][1] = r + k * dr;
                        empties++;
                    } else blocked = 1;
                }
                if (!blocked && mine >= need) return empties;
            }
    return -1;
}

/* True if (c, r) is empty and has a stone among its 8 neighbours. */
static int near_stone(int c, int r) {
    int dc, dr;
    if (board[c][r] != EMPTY) return 0;
    for (dc = -1; dc <= 1; dc++)
        for (dr = -1; dr <= 1; dr++)
            if ((dc || dr) && on_board(c + dc, r + dr) && board[c + dc][r + dr] != EMPTY) return 1;
    return 0;
}

/* Picks one empty point: next to a stone if possible, else anywhere; returns 0 if none. */
static int pick_point(int *pc, int *pr) {
    int cand[N * N][2], n = 0, c, r;
    for (c = 0; c < N; c++)
        for (r = 0; r < N; r++)
            if (near_stone(c, r)) {
                cand[n][0] = c;
                cand[n][1] = r;
                n++;
            }
    if (n == 0)
        for (c = 0; c < N; c++)
            for (r = 0; r < N; r++)
                if (board[c][r] == EMPTY) {
                    cand[n][0] = c;
                    cand[n][1] = r;
                    n++;
                }
    if (n == 0) return 0;
    n = rand() % n;
    *pc = cand[n][0];
    *pr = cand[n][1];
    return 1;
}

/* Chooses up to `count` stones for us, places them, and prints the move line. */
static void play_turn(int count) {
    int stones[2][2], placed = 0, window[6][2], n, i;
    if (count_empty() < count) count = count_empty();
    /* Win: a window with four or more of ours needs at most two stones. */
    n = find_window(me, 6 - count, window);
    /* Block: an opponent window that two stones would complete. */
    if (n < 0) n = find_window(other(me), 4, window);
    for (i = 0; n > 0 && i < n && placed < count; i++) {
        stones[placed][0] = window[i][0];
        stones[placed][1] = window[i][1];
        board[window[i][0]][window[i][1]] = me;
        placed++;
    }
    while (placed < count) {
        int c, r;
        if (count_empty() == N * N) {
            c = N / 2;
            r = N / 2;
        } else if (!pick_point(&c, &r)) {
            break;
        }
        stones[placed][0] = c;
        stones[placed][1] = r;
        board[c][r] = me;
        placed++;
    }
    if (placed == 0) return; /* board full: nothing to say */
    printf("move ");
    for (i = 0; i < placed; i++) printf("%c%c", 'A' + stones[i][0], 'A' + stones[i][1]);
    printf("\n");
    fflush(stdout);
}

int main(void) {
    char line[256];
    srand((unsigned)time(NULL) ^ (unsigned)clock());
    while (fgets(line, sizeof line, stdin)) {
        char *p = line;
        size_t len = strlen(line);
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
            line[--len] = '\0';
        if (strncmp(p, "new ", 4) == 0) {
            memset(board, 0, sizeof board);
            me = (strcmp(p + 4, "black") == 0) ? BLACK : WHITE;
            if (me == BLACK) play_turn(1); /* Black's opening: one stone */
        } else if (strncmp(p, "move ", 5) == 0) {
            int c, r, i;
            p += 5;
            for (i = 0; i < 2 && parse_point(p, &c, &r); i++, p += 2) board[c][r] = other(me);
            play_turn(2);
        } else if (strncmp(p, "black ", 6) == 0 || strncmp(p, "white ", 6) == 0) {
            int c, r, i, colour = (p[0] == 'b') ? BLACK : WHITE;
            p += 6;
            for (i = 0; i < 2 && parse_point(p, &c, &r); i++, p += 2) board[c][r] = colour;
            me = colour;
        } else if (strcmp(p, "next") == 0) {
            me = other(me);
            play_turn(2);
        } else if (strcmp(p, "name?") == 0) {
            printf("name connect6_sau\n");
            fflush(stdout);
        } else if (strcmp(p, "end") == 0 || strcmp(p, "quit") == 0) {
            break;
        }
        /* Anything else is ignored. */
    }
    return 0;
}
