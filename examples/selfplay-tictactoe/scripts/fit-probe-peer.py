"""The fit probe's PyTorch peer (README, "Why 32 heads"): transformers' LlamaForCausalLM of the `tiny` preset's shape
(d 128, 2 layers, MLP 384, tied embeddings), or a plain MLP on the one-hot board, trained on the best reply to the
random player at every TicTacToe position (each best move once), token ids of its own (not the example's BPE).
Prints the share of positions whose most likely move is a best reply, and the probability mass on best replies.

    python scripts/fit-probe-peer.py --heads 32            # 3,000 updates of 64, AdamW 1e-3 (20 to warm up, a cosine
                                                           # to a tenth), gradients clipped to 1, seed 0
    python scripts/fit-probe-peer.py --layout lines        # the board as its eight lines
    python scripts/fit-probe-peer.py --rope-theta 1e12     # (almost) no rotary positions
    python scripts/fit-probe-peer.py --mlp                 # 27 cell states + the mark to move -> 384 -> 384 -> 9
                                                           # (a constant 1e-3, no clipping)
"""
import argparse, math, random
import torch
from transformers import LlamaConfig, LlamaForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument('--layout', choices=['rows', 'lines'], default='rows')
parser.add_argument('--heads', type=int, default=4)
parser.add_argument('--rope-theta', type=float, default=10000)
parser.add_argument('--steps', type=int, default=3000)
parser.add_argument('--learning-rate', type=float, default=1e-3)
parser.add_argument('--mlp', action='store_true')
args = parser.parse_args()
torch.set_num_threads(1)

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
def winner(board):
  for a, b, c in LINES:
    if board[a] and board[a] == board[b] == board[c]: return board[a]
def to_move(board): return 'O' if board.count('O') == board.count('X') else 'X'
memo = {}
def win_chance(board, me):
  """The chance that `me` wins against the uniform random player, playing on perfectly."""
  key = (tuple(board), me)
  if key in memo: return memo[key]
  empty = [i for i in range(9) if not board[i]]
  if winner(board): chance = 1.0 if winner(board) == me else 0.0
  elif not empty: chance = 0.0
  else:
    mark = to_move(board); chances = []
    for cell in empty:
      board[cell] = mark; chances.append(win_chance(board, me)); board[cell] = ''
    chance = max(chances) if mark == me else sum(chances) / len(chances)
  memo[key] = chance; return chance
positions = []; seen = set()
def visit(board):
  if tuple(board) in seen: return
  seen.add(tuple(board))
  if winner(board) or all(board): return
  positions.append(list(board)); mark = to_move(board)
  for cell in range(9):
    if not board[cell]: board[cell] = mark; visit(board); board[cell] = ''
visit([''] * 9)
# Ids: a cell's state and place 0..26 (state·9 + cell), line end 27, row end 28, O 29, X 30, '>' 31, moves 32..40, end 41.
def cell_id(board, cell): return {'': 0, 'O': 1, 'X': 2}[board[cell]] * 9 + cell
def prompt(board):
  if args.layout == 'rows': ids = [t for row in range(3) for t in [cell_id(board, 3 * row + i) for i in range(3)] + [28]]
  else: ids = [t for line in LINES for t in [cell_id(board, cell) for cell in line] + [27]]
  return ids + [29 if to_move(board) == 'O' else 30, 31]
data = []
for board in positions:
  mark = to_move(board); empty = [c for c in range(9) if not board[c]]; chances = []
  for cell in empty:
    board[cell] = mark; chances.append(win_chance(board, mark)); board[cell] = ''
  best = max(chances); data.append((prompt(board), [32 + c for c, chance in zip(empty, chances) if chance >= best - 1e-9]))
examples = [(ids, move) for ids, moves in data for move in moves]
print(f'{len(data)} positions, {len(examples)} examples')

torch.manual_seed(0); random.seed(0)
steps, rate = args.steps, args.learning_rate
if args.mlp:
  def one_hot(ids):
    x = torch.zeros(28)
    for t in ids[:12]:
      if t < 27: x[t] = 1
    x[27] = 1 if ids[-2] == 29 else 0
    return x
  inputs = torch.stack([one_hot(ids) for ids, _ in data])
  model = torch.nn.Sequential(torch.nn.Linear(28, 384), torch.nn.SiLU(), torch.nn.Linear(384, 384), torch.nn.SiLU(), torch.nn.Linear(384, 9))
  move_logits = lambda: torch.nn.functional.pad(model(inputs), (32, 1), value=-math.inf)  # laid out as the token ids
  examples = [(i, move) for i, (_, moves) in enumerate(data) for move in moves]
else:
  config = LlamaConfig(vocab_size=42, hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=args.heads,
                       num_key_value_heads=args.heads, rope_theta=args.rope_theta, rms_norm_eps=1e-5, tie_word_embeddings=True,
                       max_position_embeddings=64)
  model = LlamaForCausalLM(config)
  prompts = torch.tensor([ids for ids, _ in data])
  move_logits = lambda: model(prompts).logits[:, -1, :]  # every token: a non-move counts against the fit
optimizer = torch.optim.AdamW(model.parameters(), lr=rate, weight_decay=0.0)
schedule = lambda s: min(1, (s + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1, s / steps))))
def evaluate():
  model.eval()
  with torch.no_grad(): probabilities = move_logits().float().softmax(-1)
  model.train()
  hits = sum(int(int(probabilities[i].argmax()) in moves) for i, (_, moves) in enumerate(data))
  mass = sum(float(probabilities[i, moves].sum()) for i, (_, moves) in enumerate(data))
  return hits / len(data), mass / len(data)
order = []
for step in range(steps):
  if len(order) < 64: order += random.sample(range(len(examples)), len(examples))
  batch = [examples[order.pop()] for _ in range(64)]
  if args.mlp:
    loss = torch.nn.functional.cross_entropy(model(inputs[[i for i, _ in batch]]), torch.tensor([m - 32 for _, m in batch]))
  else:
    ids = torch.tensor([p + [m, 41] for p, m in batch])
    logits = model(ids).logits[:, -3:-1, :]
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 42), ids[:, -2:].reshape(-1))
  optimizer.zero_grad(); loss.backward()
  if not args.mlp:
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    for group in optimizer.param_groups: group['lr'] = rate * schedule(step)
  optimizer.step()
  if (step + 1) % 500 == 0:
    hits, mass = evaluate()
    print(f'step {step + 1}: loss {loss.item():.3f}, a best reply most likely at {100 * hits:.1f} % of positions, mass on best replies {mass:.3f}', flush=True)
