"""rlcourse: tested numpy reference implementations behind the rlcourse lessons.

``import rlcourse as rc`` exposes every public name of the library at the top level
(``rc.gae``, ``rc.ppo``, ``rc.CartPole``). The package has three layers, each in its folders
(see docs/architecture.md):

- building blocks: :mod:`rlcourse.core` (autodiff, nn, optim, returns, distributions, losses,
  token maths, a tiny causal transformer LM) and :mod:`rlcourse.envs`;
- trainers: :mod:`rlcourse.tabular`, :mod:`rlcourse.algos`, :mod:`rlcourse.posttrain`,
  :mod:`rlcourse.search`; and pictures of their results in :mod:`rlcourse.viz`;
- the course layer, :mod:`rlcourse.course` (exercises, notebook tooling, the ``rlcourse``
  command), which no library module imports. ``rc.exercises`` loads it on first use.

``from rlcourse import *`` brings in everything in ``__all__``, which leaves out the autodiff
ops named like Python builtins (``sum``, ``abs``): use them as ``rc.sum``, ``rc.abs``.
"""

__version__ = "0.1.0"

from .algos.actor_critic import *  # noqa: E402,F401,F403
from .algos.dqn import *  # noqa: E402,F401,F403
from .algos.dqn_diagnostics import *  # noqa: E402,F401,F403
from .algos.dqn_sweep import *  # noqa: E402,F401,F403
from .algos.evaluate import *  # noqa: E402,F401,F403
from .algos.models import *  # noqa: E402,F401,F403
from .algos.ppo import *  # noqa: E402,F401,F403
from .algos.reinforce import *  # noqa: E402,F401,F403
from .algos.reinforce_sweep import *  # noqa: E402,F401,F403
from .algos.rollout import *  # noqa: E402,F401,F403
from .algos.sweep import *  # noqa: E402,F401,F403
from .algos.trainer import *  # noqa: E402,F401,F403
from .core.autodiff import *  # noqa: E402,F401,F403
from .core.blas import *  # noqa: E402,F401,F403
from .core.checkpoint import *  # noqa: E402,F401,F403
from .core.distributions import *  # noqa: E402,F401,F403
from .core.heap import *  # noqa: E402,F401,F403
from .core.importance import *  # noqa: E402,F401,F403
from .core.kl import *  # noqa: E402,F401,F403
from .core.lm import *  # noqa: E402,F401,F403
from .core.losses import *  # noqa: E402,F401,F403
from .core.nn import *  # noqa: E402,F401,F403
from .core.optim import *  # noqa: E402,F401,F403
from .core.returns import *  # noqa: E402,F401,F403
from .core.sampling import *  # noqa: E402,F401,F403
from .core.tokenizer import *  # noqa: E402,F401,F403
from .core.tokens import *  # noqa: E402,F401,F403
from .core.transformer import *  # noqa: E402,F401,F403
from .envs import *  # noqa: E402,F401,F403
from .posttrain.grpo import *  # noqa: E402,F401,F403
from .posttrain.preference import *  # noqa: E402,F401,F403
from .posttrain.rlhf import *  # noqa: E402,F401,F403
from .posttrain.rollout import *  # noqa: E402,F401,F403
from .posttrain.sft import *  # noqa: E402,F401,F403
from .posttrain.tasks import *  # noqa: E402,F401,F403
from .search.decoding import *  # noqa: E402,F401,F403
from .search.mcts import *  # noqa: E402,F401,F403
from .search.minimax import *  # noqa: E402,F401,F403
from .tabular.bandits import *  # noqa: E402,F401,F403
from .tabular.control import *  # noqa: E402,F401,F403
from .tabular.dp import *  # noqa: E402,F401,F403
from .tabular.exploration import *  # noqa: E402,F401,F403
from .tabular.prediction import *  # noqa: E402,F401,F403
from .tabular.targets import *  # noqa: E402,F401,F403
from .viz.grid import *  # noqa: E402,F401,F403
from .viz.player import *  # noqa: E402,F401,F403
from .viz.plots import *  # noqa: E402,F401,F403
from .viz.renderers import *  # noqa: E402,F401,F403
from .viz.scene import *  # noqa: E402,F401,F403
from .viz.text import *  # noqa: E402,F401,F403

# Every module's own __all__, minus the autodiff ops named like builtins (tests/test_package.py
# checks that this list and the modules agree).
__all__ = [
    # algos.actor_critic
    "actor_critic", "actor_critic_loss", "A2C_CARTPOLE",
    # algos.dqn
    "ReplayBuffer", "DQN_CARTPOLE", "dqn", "dqn_targets", "dqn_loss",
    # algos.dqn_sweep
    "dqn_sweep",
    # algos.dqn_diagnostics
    "action_gap", "relative_change", "greedy_flips", "value_ceiling", "overestimation",
    "greedy_discounted_returns", "RecentStates",
    # algos.evaluate
    "EvalResult", "evaluate", "greedy_policy", "Checkpoints",
    # algos.models
    "make_actor_critic", "actor_critic_model",
    # algos.ppo
    "ppo", "ppo_loss", "PPO_CARTPOLE",
    # algos.reinforce
    "reinforce", "reinforce_weights", "reinforce_loss", "softmax_score", "policy_gradient_estimate",
    "collect_episodes",
    # algos.reinforce_sweep
    "reinforce_sweep",
    # algos.rollout
    "Rollout", "collect_rollout", "policy_step", "explained_variance",
    # algos.sweep
    "ppo_sweep", "actor_critic_sweep",
    # algos.trainer
    "TrainResult",
    # core.autodiff
    "Tensor", "value_and_grad", "grad", "numerical_grad", "tree_map", "tree_leaves", "tanh", "relu",
    "sigmoid", "exp", "log", "sqrt", "square", "log_softmax", "softmax", "logsumexp", "log_sigmoid",
    "minimum", "maximum", "clip", "where", "mean", "take_along_axis", "reshape", "transpose",
    "concatenate", "stack", "stop_gradient", "embedding", "affine", "layer_norm", "gelu",
    "self_attention",
    # core.blas
    "single_thread_blas",
    # core.checkpoint
    "save_params", "load_params",
    # core.distributions
    "categorical_sample", "categorical_log_prob", "categorical_entropy", "categorical_probs",
    "gaussian_log_prob", "gaussian_entropy",
    # core.heap
    "keep_freed_memory",
    # core.importance
    "importance_weights", "importance_estimate", "ImportanceEstimate", "effective_sample_size",
    "per_decision_estimate", "PerDecisionEstimate", "direct_method_estimate",
    "doubly_robust_estimate", "stepwise_doubly_robust_estimate", "StepwiseEstimate",
    # core.kl
    "exact_kl", "sampled_log_ratio", "kl_estimate", "kl_penalized_rewards",
    # core.lm
    "lm_init", "lm_logits", "lm_next_logits", "lm_nll", "completion_log_prob", "generate",
    # core.losses
    "ppo_clip_objective", "ppo_clip_loss", "PPOClipResult", "huber", "PreferenceResult",
    "preference_loss", "dpo_loss", "ipo_loss", "grpo_advantages", "rloo_advantages",
    "aggregate_token_loss", "GRPOLoss", "grpo_loss",
    # core.nn
    "orthogonal", "linear_init", "linear", "mlp_init", "mlp", "count_params",
    # core.optim
    "SGD", "Adam", "clip_by_global_norm", "global_norm", "linear_schedule",
    # core.returns
    "discounted_returns", "n_step_return", "gae",
    # core.sampling
    "top_k_filter", "top_p_filter", "filter_logits", "sample_token",
    # core.tokenizer
    "PAD", "BOS", "EOS", "Tokenizer",
    # core.tokens
    "token_log_probs", "sequence_log_prob", "completion_mask",
    # core.transformer
    "TransformerConfig", "transformer_init", "transformer_config", "transformer_logits", "KVCache",
    "transformer_prefill", "transformer_decode",
    # envs
    "Step", "CartPole", "TabularMDP", "check_mdp", "GridWorld", "FrozenLake", "CliffWalking",
    "LEFT", "DOWN", "RIGHT", "UP", "Bandit", "TicTacToe", "TicTacToeState", "from_gymnasium",
    # posttrain.grpo
    "GRPOHistory", "grpo_step", "grpo_train", "RFTHistory", "rft_train",
    # posttrain.preference
    "PreferencePairs", "make_preference_pairs", "pair_log_probs", "evaluate_pairs",
    "PreferenceTraining", "train_on_preferences", "SampleReport", "rate_samples",
    # posttrain.rlhf
    "penalize_missing_eos", "reward_to_go", "rlhf_advantages", "RLHFHistory", "rlhf_step",
    "rlhf_train",
    # posttrain.rollout
    "TokenRollout", "sample_rollout", "policy_token_log_probs", "rollout_rewards",
    # posttrain.sft
    "sft",
    # posttrain.tasks
    "addition_data", "ReversalTask", "reversal_task", "token_counts", "STYLE_WORDS", "style_data",
    "style_quality", "style_preferences", "ReviewTask", "REVIEW_MALFORMED", "review_task",
    # search.decoding
    "BeamResult", "beam_search", "BestOfNResult", "best_of_n", "best_of_n_distribution",
    "pass_at_k",
    # search.mcts
    "MCTSResult", "uct_score", "puct_score", "mcts",
    # search.minimax
    "minimax_values", "minimax_value", "perfect_action",
    # tabular.bandits
    "EpsilonGreedy", "UCB", "GradientBandit", "ucb_scores", "run_bandit", "BanditResult",
    # tabular.control
    "ControlResult", "mc_control", "q_learning", "sarsa", "expected_sarsa", "double_q_learning",
    # tabular.dp
    "expected_rewards", "q_from_v", "greedy", "policy_dynamics", "bellman_optimality_backup",
    "policy_evaluation", "policy_evaluation_exact", "value_iteration", "policy_iteration",
    # tabular.exploration
    "epsilon_greedy", "epsilon_greedy_probs",
    # tabular.prediction
    "PredictionResult", "mc_prediction", "td0", "n_step_td", "td_lambda", "Episode",
    "record_episodes",
    # tabular.targets
    "td_target", "n_step_target", "mc_returns", "lambda_returns",
    # viz.grid
    "plot_grid",
    # viz.player
    "Animation", "animate", "side_by_side",
    # viz.plots
    "learning_curve", "ppo_diagnostics", "moving_average",
    # viz.renderers
    "cartpole_scene", "gridworld_scene", "tictactoe_scene", "bandit_scene", "render",
    # viz.scene
    "Scene", "rasterize",
    # viz.text
    "SamplesTable", "samples_table",
]


def __getattr__(name):
    # The course layer is loaded only when a lesson asks for it: ``rc.exercises.check(...)``.
    if name == "exercises":
        from .course import exercises

        return exercises
    raise AttributeError(f"module 'rlcourse' has no attribute {name!r}")
