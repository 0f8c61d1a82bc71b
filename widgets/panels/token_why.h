// TokenWhy: the drill-down's "Why this token?" view. For one response token
// of one step: both probabilities (p and log p), delta log p and the ratio,
// the most likely alternatives under each engine side by side, each MoE
// layer's experts on both sides with the flipped ones marked, and the path
// the token went through (each engine's rounding points, the kernel family
// and the rows of the forwards that computed it, the routing replay).
//
// The full detail is stored for each step's K largest-|delta log p| tokens
// (core/rl/worst_tokens.h), listed in the chooser. Any other token picked in
// the scatter or the samples shows what is known of it (both log-probs, the
// router flip count where stored) and says where the detail is kept.
#pragma once

#include <cstdint>
#include <limits>

#include <QString>
#include <QWidget>

#include "core/rl/worst_tokens.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace mlk {

// A token picked in the scatter or the samples, with what that view knows.
struct TokenPick {
    int32_t seq = -1, pos = -1;  // sequence in the batch, position in the response
    int32_t token = -1;          // -1: unknown
    double lp_roll = std::numeric_limits<double>::quiet_NaN();
    double lp_train = std::numeric_limits<double>::quiet_NaN();
    int flips = -1;  // router flips summed over MoE layers; -1: not known here
};

class TokenWhy : public QWidget {
    Q_OBJECT
public:
    explicit TokenWhy(QWidget* parent = nullptr);

    // The step's stored worst tokens (empty: none stored, e.g. an older run);
    // shows the worst one. note: why none are shown, when there are none.
    void setStep(WorstTokens worst, const QString& note = {});
    // Shows the stored detail of worst token `rank` (0 = largest |delta log p|).
    void showWorst(int rank);
    // Shows a picked token: the stored detail when it is one of the worst,
    // else what `pick` knows.
    void showToken(const TokenPick& pick);

    // The token shown (seq -1: none), with what is known of it.
    TokenPick shown() const { return shown_; }

    // ---- for tests ----
    const WorstTokens& worst() const { return worst_; }
    int shownRank() const { return rank_; }  // -1: a token without stored detail
    QComboBox* chooser() const { return chooser_; }
    QTableWidget* alternativesTable() const { return alts_; }
    QTableWidget* routerTable() const { return routes_; }
    QString summaryText() const;                          // plain text of the numbers shown
    QString pathText() const;                             // plain text of the path
    QString noteText() const;                             // why no token is shown
    int flippedExperts() const { return flippedShown_; }  // experts marked as flipped

signals:
    void shownChanged();  // another token (or none) is shown, or another step

private:
    void showDetail(const WorstToken& t);
    void showKnown(const TokenPick& pick);
    void clearTables();

    WorstTokens worst_;
    TokenPick shown_;
    int rank_ = -1;
    int flippedShown_ = 0;
    bool filling_ = false;
    QComboBox* chooser_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* altsTitle_ = nullptr;
    QTableWidget* alts_ = nullptr;
    QLabel* routesTitle_ = nullptr;
    QTableWidget* routes_ = nullptr;
    QLabel* path_ = nullptr;
    QLabel* note_ = nullptr;
};

}  // namespace mlk
